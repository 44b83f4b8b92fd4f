//! A job search's cursor (`after=`): the place after a page's last job in the search's order,
//! bound to the search's parameters.

use crate::store::{After, JobSearch};
use sha2::{Digest, Sha256};

/// What a cursor is checked against: the search's parameters but its page.
pub(super) fn fingerprint(search: &JobSearch) -> [u8; 8] {
    let bare = JobSearch {
        page: crate::store::Page {
            page: 1,
            size: search.page.size,
        },
        after: None,
        ..search.clone()
    };
    let digest = Sha256::digest(serde_json::to_vec(&bare).unwrap_or_default());
    let mut out = [0; 8];
    out.copy_from_slice(&digest[..8]);
    out
}

/// `after=`: an opaque token, base64url without padding of a version byte, the search's
/// fingerprint and the place after which the page starts. Not a secret: a client that forges one
/// only gets another page of the same search, inside the window.
pub(super) struct Cursor {
    pub(super) fingerprint: [u8; 8],
    pub(super) after: After,
}

impl Cursor {
    const VERSION: u8 = 1;
    const LEN: usize = 1 + 8 + 8 + 4 + 8 + 8;

    pub(super) fn encode(&self) -> String {
        let mut bytes = Vec::with_capacity(Self::LEN);
        bytes.push(Self::VERSION);
        bytes.extend_from_slice(&self.fingerprint);
        bytes.extend_from_slice(&self.after.position.to_be_bytes());
        bytes.extend_from_slice(&self.after.score.to_be_bytes());
        bytes.extend_from_slice(&self.after.created_at.to_be_bytes());
        bytes.extend_from_slice(&self.after.id.to_be_bytes());
        base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, bytes)
    }

    pub(super) fn decode(token: &str) -> Result<Cursor, &'static str> {
        const MALFORMED: &str = "must be the `next` cursor of a page of this search";
        let bytes =
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, token)
                .map_err(|_| MALFORMED)?;
        if bytes.len() != Self::LEN || bytes[0] != Self::VERSION {
            return Err(MALFORMED);
        }
        let take = |from: usize, n: usize| &bytes[from..from + n];
        let eight = |from: usize| -> [u8; 8] { take(from, 8).try_into().unwrap_or([0; 8]) };
        let after = After {
            position: i64::from_be_bytes(eight(9)),
            score: u32::from_be_bytes(take(17, 4).try_into().unwrap_or([0; 4])),
            created_at: i64::from_be_bytes(eight(21)),
            id: i64::from_be_bytes(eight(29)),
        };
        if after.position < 1 || after.id < 1 {
            return Err(MALFORMED);
        }
        Ok(Cursor {
            fingerprint: eight(1),
            after,
        })
    }
}
