//! Signs webhook deliveries the Standard Webhooks way.
//!
//! A secret is written `whsec_` followed by the base64 of its key bytes.
//! The signed content is `{webhook_id}.{timestamp}.{body}`. A signature is
//! `v1,` followed by the base64 of HMAC-SHA256(key, content). With several
//! secrets, as while a secret is being rotated, the `webhook-signature`
//! header holds one signature per secret, separated by a single space.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_PAD_INDIFFERENT};
use hmac::{Hmac, Mac};
use rand::RngCore;
use rand::rngs::OsRng;
use sha2::Sha256;

/// The prefix of a secret's text form.
const PREFIX: &str = "whsec_";
/// The fewest key bytes a secret may have.
const MIN_LEN: usize = 24;
/// The most key bytes a secret may have.
const MAX_LEN: usize = 64;
/// The number of key bytes in a new secret.
const NEW_LEN: usize = 32;

/// A signing secret: the key bytes of HMAC-SHA256.
///
/// Its `Debug` form is `Secret(..)` and never shows the key.
/// Use [`Secret::expose`] to get the `whsec_…` text on purpose.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// Makes a new random secret of 32 bytes, from the operating system's
    /// random source (`rand::rngs::OsRng`).
    ///
    /// It panics only if the operating system cannot give random bytes.
    pub fn generate() -> Secret {
        let mut key = vec![0u8; NEW_LEN];
        OsRng.fill_bytes(&mut key);
        Secret(key)
    }

    /// Reads a secret written as `whsec_<base64>`.
    ///
    /// The base64 uses the standard alphabet. Padding may be there or not.
    /// The key must have 24 to 64 bytes. The error says what is wrong, and
    /// never repeats the secret.
    pub fn parse(s: &str) -> Result<Secret, String> {
        let Some(encoded) = s.trim().strip_prefix(PREFIX) else {
            return Err(format!("the secret must start with {PREFIX}"));
        };
        let key = STANDARD_PAD_INDIFFERENT
            .decode(encoded)
            .map_err(|_| "the secret is not valid base64 after whsec_".to_string())?;
        if key.len() < MIN_LEN || key.len() > MAX_LEN {
            return Err(format!(
                "the secret must have {MIN_LEN} to {MAX_LEN} bytes, not {}",
                key.len()
            ));
        }
        Ok(Secret(key))
    }

    /// Gives the secret's text form: `whsec_` and the padded base64 of the key.
    pub fn expose(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.0))
    }

    /// Signs the content with this secret and gives `v1,<base64>`.
    fn sign(&self, webhook_id: &str, timestamp: i64, body: &[u8]) -> String {
        // HMAC takes a key of any length, so this never fails.
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC-SHA256 takes a key of any length");
        mac.update(webhook_id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// Gives the `webhook-signature` header value.
///
/// It holds one `v1,<signature>` per secret, in the order given, separated
/// by a single space. No secrets give an empty string.
pub fn signature(secrets: &[Secret], webhook_id: &str, timestamp: i64, body: &[u8]) -> String {
    secrets
        .iter()
        .map(|secret| secret.sign(webhook_id, timestamp, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> Secret {
        Secret::parse(s).expect("test secret")
    }

    // Known answers made with the Python package standardwebhooks 1.3.0
    // (`Webhook(secret).sign(msg_id, datetime, payload)`), by gen_vectors.py.

    /// The secret, id, timestamp and payload of the Standard Webhooks
    /// reference tests.
    #[test]
    fn known_answer_reference_vector() {
        let s = secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        assert_eq!(
            signature(
                &[s],
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                br#"{"test": 2432232314}"#
            ),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    /// Two secrets, as while rotating. standardwebhooks 1.3.0's
    /// `Webhook(b).verify(body, headers)` accepted this header through its
    /// second signature only; the first alone did not verify with `b`.
    #[test]
    fn known_answer_two_secrets() {
        let a = secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
        let b = secret("whsec_ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM=");
        // `domain::webhook::webhook_id("evt_42", 7)`.
        let id = "msg_2a34347b02bb866c2d321c969a186a2e";
        let ts = 1796488452;
        let body = r#"{"type":"job.published","data":{"id":42,"title":"Café Ünïcode"}}"#.as_bytes();
        let header = "v1,lE2RbVbtq2b1q0JJSYlCUXUEYYHbzkb3GxNuKXzuklY= \
                      v1,FPLnXTawnTM2A1/wO0b76Xgi2vLk43HvJhPKx0z9uTg=";
        assert_eq!(signature(&[a.clone(), b.clone()], id, ts, body), header);

        // A receiver that knows only `b` finds its signature second, not first.
        let with_b = signature(std::slice::from_ref(&b), id, ts, body);
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts.len(), 2);
        assert_ne!(parts[0], with_b);
        assert_eq!(parts[1], with_b);

        // The order of secrets is kept.
        assert_eq!(
            signature(&[b, a], id, ts, body),
            format!("{} {}", parts[1], parts[0])
        );
    }

    #[test]
    fn signature_changes_with_each_part() {
        let s = [secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")];
        let base = signature(&s, "msg_1", 10, b"{}");
        assert_ne!(base, signature(&s, "msg_2", 10, b"{}"));
        assert_ne!(base, signature(&s, "msg_1", 11, b"{}"));
        assert_ne!(base, signature(&s, "msg_1", 10, b"{ }"));
        assert_eq!(signature(&[], "msg_1", 10, b"{}"), "");
    }

    #[test]
    fn parse_and_expose_round_trip() {
        for text in [
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        ] {
            assert_eq!(secret(text).expose(), text);
        }
        // Padding may be left out when reading; expose always pads.
        let unpadded = secret("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8");
        assert_eq!(
            unpadded.expose(),
            "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
        );

        let new = Secret::generate();
        assert_eq!(new.0.len(), 32);
        assert_eq!(secret(&new.expose()).expose(), new.expose());
        assert_ne!(Secret::generate().expose(), new.expose());
    }

    #[test]
    fn parse_refuses_bad_secrets() {
        // Wrong or missing prefix.
        assert!(Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
        assert!(Secret::parse("whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
        assert!(Secret::parse("").is_err());
        // Not standard base64.
        assert!(Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-_").is_err());
        assert!(Secret::parse("whsec_not base64!").is_err());
        // Too short (23 bytes) and too long (65 bytes).
        assert!(Secret::parse(&format!("whsec_{}", STANDARD.encode([1u8; 23]))).is_err());
        assert!(Secret::parse(&format!("whsec_{}", STANDARD.encode([1u8; 65]))).is_err());
        assert!(Secret::parse(&format!("whsec_{}", STANDARD.encode([1u8; 24]))).is_ok());
        assert!(Secret::parse(&format!("whsec_{}", STANDARD.encode([1u8; 64]))).is_ok());
        assert!(Secret::parse("whsec_").is_err());
        // The error never repeats the secret.
        let err = Secret::parse("whsec_c2VjcmV0").expect_err("too short");
        assert!(!err.contains("c2VjcmV0"), "{err}");
    }

    #[test]
    fn debug_hides_the_key() {
        let s = secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        assert_eq!(format!("{s:?}"), "Secret(..)");
        assert_eq!(format!("{:?}", Some(s.clone())), "Some(Secret(..))");
        assert!(!format!("{s:#?}").contains("MfKQ"));
    }
}
