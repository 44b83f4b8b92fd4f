//! Unsubscribe tokens (docs/api.md, "Job alerts and email preferences"): a token names one
//! alert or one user's application digest, is signed (HMAC-SHA256) with `UNSUBSCRIBE_SECRET`,
//! or, when that is unset, with `JWT_SECRET` under the purpose string below, and never expires.
//! [`Keys`] says which secret signs and which verify. The digest emails carry the token in their
//! `List-Unsubscribe` link (§5, RFC 8058).
//!
//! A token is `base64url(kind ‖ id ‖ tag)`, without padding: `kind` one byte (1 the digest,
//! 2 an alert), `id` the user's or alert's id as big-endian bytes with no leading zero byte (1 to
//! 8 bytes), and `tag` the first 16 bytes of HMAC-SHA256 over [`PURPOSE`] followed by
//! `kind ‖ id`. A digest token for user 42 is 24 characters. The purpose string separates these
//! tags from anything else signed with the same secret: a JWT's HMAC input starts with its
//! base64url header (`eyJ…`), never with `PURPOSE`, so no tag of one is ever a tag of the other.
//! That is what makes `JWT_SECRET` usable as the default key: the key derived from it is the
//! secret under this purpose.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretSlice};
use sha2::Sha256;

/// What every tag signs before the payload; a new format gets a new purpose.
const PURPOSE: &[u8] = b"jobboard unsubscribe token v1\0";
/// The tag's length: half of HMAC-SHA256, as RFC 2104 §5 allows (128 bits against forgery).
const TAG_LEN: usize = 16;
const KIND_DIGEST: u8 = 1;
const KIND_ALERT: u8 = 2;
/// The longest token: a kind, an 8-byte id and the tag, in base64url.
const MAX_TOKEN_LEN: usize = (1 + 8 + TAG_LEN).div_ceil(3) * 4;

/// What a link stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The hourly `applications.digest` of this user.
    Digest { user_id: i64 },
    /// The `alert.digest` of this alert.
    Alert { alert_id: i64 },
}

impl Target {
    fn payload(self) -> Vec<u8> {
        let (kind, id) = match self {
            Target::Digest { user_id } => (KIND_DIGEST, user_id),
            Target::Alert { alert_id } => (KIND_ALERT, alert_id),
        };
        let bytes = (id as u64).to_be_bytes();
        // At least one byte, so that id 0 has a form too.
        let first = bytes.iter().position(|b| *b != 0).unwrap_or(7);
        let mut out = Vec::with_capacity(1 + 8 - first + TAG_LEN);
        out.push(kind);
        out.extend_from_slice(&bytes[first..]);
        out
    }

    /// The target `payload` names, if it is in the one form [`Target::payload`] writes.
    fn from_payload(payload: &[u8]) -> Option<Target> {
        let (&kind, id) = payload.split_first()?;
        if id.is_empty() || id.len() > 8 || (id.len() > 1 && id[0] == 0) {
            return None;
        }
        let mut bytes = [0u8; 8];
        bytes[8 - id.len()..].copy_from_slice(id);
        let id = u64::from_be_bytes(bytes) as i64;
        match kind {
            KIND_DIGEST => Some(Target::Digest { user_id: id }),
            KIND_ALERT => Some(Target::Alert { alert_id: id }),
            _ => None,
        }
    }
}

fn mac(secret: &[u8], payload: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length; this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of every length"));
    mac.update(PURPOSE);
    mac.update(payload);
    mac
}

/// The secrets of unsubscribe links: the one that signs, and every one that verifies.
pub struct Keys {
    /// `UNSUBSCRIBE_SECRET`, or else `JWT_SECRET` (the process's random one when unset).
    signing: SecretSlice<u8>,
    /// The signing one first, then `UNSUBSCRIBE_SECRET_PREVIOUS`, then `JWT_SECRET` and
    /// `JWT_SECRET_PREVIOUS` (each once).
    verifying: Vec<SecretSlice<u8>>,
}

impl Keys {
    /// `own` (`UNSUBSCRIBE_SECRET`) signs when given, else `jwt` (`JWT_SECRET`). Tokens verify
    /// under `own`, `previous` (`UNSUBSCRIBE_SECRET_PREVIOUS`), `jwt` and `jwt_previous`
    /// (`JWT_SECRET_PREVIOUS`): a link signed before `own` was set keeps working as long as the
    /// JWT secret that signed it verifies, and one signed with `own` does not depend on the JWT
    /// secrets at all, however often they rotate.
    pub fn new(
        own: Option<&[u8]>,
        previous: Option<&[u8]>,
        jwt: &[u8],
        jwt_previous: Option<&[u8]>,
    ) -> Keys {
        let signing = own.unwrap_or(jwt);
        let mut verifying: Vec<&[u8]> = Vec::with_capacity(4);
        for secret in [Some(signing), previous, Some(jwt), jwt_previous]
            .into_iter()
            .flatten()
        {
            if !verifying.contains(&secret) {
                verifying.push(secret);
            }
        }
        Keys {
            signing: SecretSlice::from(signing.to_vec()),
            verifying: verifying
                .into_iter()
                .map(|s| SecretSlice::from(s.to_vec()))
                .collect(),
        }
    }

    /// The secret that signs new links.
    pub fn signing(&self) -> &[u8] {
        self.signing.expose_secret()
    }

    /// What `token` names, if one of the verifying secrets signed it (see [`verify`]).
    pub fn verify(&self, token: &str) -> Option<Target> {
        let secrets: Vec<&[u8]> = self.verifying.iter().map(|s| s.expose_secret()).collect();
        verify(&secrets, token)
    }
}

/// The token that names `target`, signed with `secret`.
pub fn token(secret: &[u8], target: Target) -> String {
    let mut bytes = target.payload();
    let tag = mac(secret, &bytes).finalize().into_bytes();
    bytes.extend_from_slice(&tag[..TAG_LEN]);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// What `token` names, if one of `secrets` signed it and it is exactly as [`token`] wrote it;
/// `None` for anything else. (The HTTP layer percent-decodes the path first, so a
/// percent-encoded spelling of a token arrives here as the token itself.)
pub fn verify(secrets: &[&[u8]], token: &str) -> Option<Target> {
    if token.len() > MAX_TOKEN_LEN {
        return None;
    }
    // The engine refuses padding and non-zero trailing bits, so each byte string has one
    // spelling and a token with a character changed never decodes to the same bytes.
    let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
    let split = bytes.len().checked_sub(TAG_LEN)?;
    let (payload, tag) = bytes.split_at(split);
    let target = Target::from_payload(payload)?;
    // Compared in constant time, so a forger learns nothing from how long a refusal takes.
    secrets
        .iter()
        .any(|secret| mac(secret, payload).verify_truncated_left(tag).is_ok())
        .then_some(target)
}

/// The unsubscribe link of `target`: `{base_url}/api/unsubscribe/{token}`, with one `/` between
/// them whether or not `base_url` (`PUBLIC_BASE_URL`) ends with one.
pub fn link(base_url: &str, secret: &[u8], target: Target) -> String {
    format!(
        "{}/api/unsubscribe/{}",
        base_url.trim_end_matches('/'),
        token(secret, target)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SECRET: &[u8] = b"test-secret-test-secret-test-secret";
    const OTHER: &[u8] = b"other-secret-other-secret-other-secret";

    fn target() -> impl Strategy<Value = Target> {
        prop_oneof![
            any::<i64>().prop_map(|user_id| Target::Digest { user_id }),
            any::<i64>().prop_map(|alert_id| Target::Alert { alert_id }),
        ]
    }

    #[test]
    fn a_token_is_short_and_url_safe() {
        let t = token(SECRET, Target::Digest { user_id: 42 });
        assert_eq!(t.len(), 24, "{t}");
        assert!(
            t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{t}"
        );
        let longest = token(SECRET, Target::Alert { alert_id: i64::MAX });
        assert!(longest.len() <= MAX_TOKEN_LEN, "{longest}");
        assert_eq!(
            verify(&[SECRET], &longest),
            Some(Target::Alert { alert_id: i64::MAX })
        );
    }

    #[test]
    fn a_digest_token_never_names_an_alert() {
        let digest = token(SECRET, Target::Digest { user_id: 7 });
        let alert = token(SECRET, Target::Alert { alert_id: 7 });
        assert_ne!(digest, alert);
        assert_eq!(
            verify(&[SECRET], &digest),
            Some(Target::Digest { user_id: 7 })
        );
        assert_eq!(
            verify(&[SECRET], &alert),
            Some(Target::Alert { alert_id: 7 })
        );
    }

    #[test]
    fn the_previous_secret_verifies_and_another_does_not() {
        let t = token(OTHER, Target::Digest { user_id: 3 });
        assert_eq!(verify(&[SECRET], &t), None);
        assert_eq!(
            verify(&[SECRET, OTHER], &t),
            Some(Target::Digest { user_id: 3 })
        );
        assert_eq!(verify(&[], &t), None);
    }

    #[test]
    fn the_own_key_signs_and_every_key_verifies() {
        let (own, previous, jwt, jwt_previous): (&[u8], &[u8], &[u8], &[u8]) =
            (b"own-key", b"previous-key", SECRET, OTHER);
        let target = Target::Alert { alert_id: 12 };
        let keys = Keys::new(Some(own), Some(previous), jwt, Some(jwt_previous));
        assert_eq!(keys.signing(), own);
        for secret in [own, previous, jwt, jwt_previous] {
            assert_eq!(keys.verify(&token(secret, target)), Some(target));
        }
        assert_eq!(keys.verify(&token(b"another-key", target)), None);
        // Without a key of its own, the JWT secret signs, as it always did.
        let keys = Keys::new(None, None, jwt, None);
        assert_eq!(keys.signing(), jwt);
        assert_eq!(keys.verify(&token(jwt, target)), Some(target));
        assert_eq!(keys.verify(&token(own, target)), None);
        // The JWT secrets rotated twice: a link of the own key still verifies.
        let keys = Keys::new(Some(own), None, b"third-jwt-secret", Some(b"second"));
        assert_eq!(keys.verify(&token(own, target)), Some(target));
        assert_eq!(keys.verify(&token(jwt, target)), None);
        // The same secret given twice is checked once.
        assert_eq!(
            Keys::new(Some(jwt), Some(jwt), jwt, None).verifying.len(),
            1
        );
    }

    #[test]
    fn links_have_one_slash_before_the_path() {
        let t = token(SECRET, Target::Digest { user_id: 9 });
        for base in ["https://jobs.example", "https://jobs.example/"] {
            assert_eq!(
                link(base, SECRET, Target::Digest { user_id: 9 }),
                format!("https://jobs.example/api/unsubscribe/{t}")
            );
        }
        assert_eq!(
            link(
                "https://example.com/board/",
                SECRET,
                Target::Digest { user_id: 9 }
            ),
            format!("https://example.com/board/api/unsubscribe/{t}")
        );
    }

    /// A tag over the bare payload, as a scheme without the purpose string would make it: it
    /// must not verify, so no other use of the secret can mint a token.
    #[test]
    fn a_tag_without_the_purpose_does_not_verify() {
        let mut bytes = Target::Digest { user_id: 5 }.payload();
        let mut bare = <Hmac<Sha256> as Mac>::new_from_slice(SECRET).unwrap();
        bare.update(&bytes);
        let tag = bare.finalize().into_bytes();
        bytes.extend_from_slice(&tag[..TAG_LEN]);
        assert_eq!(verify(&[SECRET], &URL_SAFE_NO_PAD.encode(bytes)), None);
    }

    #[test]
    fn jwts_and_garbage_do_not_verify() {
        let jwt = jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            &serde_json::json!({"sub": "1", "exp": 4_000_000_000u64}),
            &jsonwebtoken::EncodingKey::from_secret(SECRET),
        )
        .unwrap();
        for t in [
            jwt.as_str(),
            "",
            "A",
            "AAAA",
            "x1",
            "999999999",
            "%2e%2e",
            "é",
        ] {
            assert_eq!(verify(&[SECRET], t), None, "{t:?}");
        }
    }

    proptest! {
        #[test]
        fn every_target_round_trips(target in target()) {
            let t = token(SECRET, target);
            prop_assert_eq!(verify(&[SECRET], &t), Some(target));
            prop_assert_eq!(verify(&[OTHER, SECRET], &t), Some(target));
            prop_assert_eq!(verify(&[OTHER], &t), None);
        }

        /// Any character replaced by another (base64url or not) fails.
        #[test]
        fn a_changed_character_fails(
            target in target(),
            at in any::<prop::sample::Index>(),
            with in prop::char::any(),
        ) {
            let t = token(SECRET, target);
            let i = at.index(t.len());
            let old = t.as_bytes()[i] as char;
            prop_assume!(with != old);
            let changed = format!("{}{with}{}", &t[..i], &t[i + 1..]);
            prop_assert_eq!(verify(&[SECRET], &changed), None, "{} -> {}", t, changed);
        }

        /// Any bit of the decoded token flipped fails.
        #[test]
        fn a_changed_byte_fails(target in target(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
            let mut bytes = URL_SAFE_NO_PAD.decode(token(SECRET, target)).unwrap();
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            prop_assert_eq!(verify(&[SECRET], &URL_SAFE_NO_PAD.encode(bytes)), None);
        }

        #[test]
        fn a_truncated_token_fails(target in target(), keep in any::<prop::sample::Index>()) {
            let t = token(SECRET, target);
            let cut = &t[..keep.index(t.len())];
            prop_assert_eq!(verify(&[SECRET], cut), None, "{}", cut);
        }

        #[test]
        fn an_extended_token_fails(target in target(), tail in "[A-Za-z0-9_=.~-]{1,12}") {
            let t = format!("{}{tail}", token(SECRET, target));
            prop_assert_eq!(verify(&[SECRET], &t), None, "{}", t);
        }

        #[test]
        fn another_secret_fails(target in target(), secret in prop::collection::vec(any::<u8>(), 0..64)) {
            prop_assume!(secret != SECRET);
            let t = token(&secret, target);
            prop_assert_eq!(verify(&[SECRET], &t), None);
            prop_assert_eq!(verify(&[&secret], &t), Some(target));
        }

        /// Whatever arrives in the path, nothing panics, and only a token as `token` writes it
        /// verifies.
        #[test]
        fn arbitrary_input_never_verifies(s in "\\PC{0,40}") {
            if let Some(target) = verify(&[SECRET], &s) {
                prop_assert_eq!(token(SECRET, target), s);
            }
        }
    }
}
