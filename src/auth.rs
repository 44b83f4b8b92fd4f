//! Passwords (Argon2id) and access tokens (HS256 JWTs with every claim checked).

use crate::config::Config;
use argon2::Argon2;
use argon2::password_hash::{
    PasswordHash, PasswordHasher, PasswordVerifier, SaltString, rand_core::OsRng,
};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use secrecy::{ExposeSecret, SecretSlice};
use serde::{Deserialize, Serialize};

const ISSUER: &str = "jobboard";
const AUDIENCE: &str = "jobboard-api";
const LEEWAY_SECS: u64 = 30;

/// Hashes a password with Argon2id. CPU-heavy: call from a blocking thread.
pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing failed: {e}"))
}

/// Checks a password against a stored hash. CPU-heavy: call from a blocking thread.
pub fn verify_password(password: &str, hash: &str) -> bool {
    match PasswordHash::new(hash) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// The claims of an access token.
#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub iat: i64,
    pub nbf: i64,
    pub exp: i64,
    pub iss: String,
    pub aud: String,
    /// The user's token generation; a password change increments it and so revokes the token.
    pub generation: i64,
}

/// Issues and verifies tokens; holds the keys.
pub struct Tokens {
    encoding: EncodingKey,
    decoding: Vec<DecodingKey>,
    validation: Validation,
    pub ttl_secs: u64,
    /// The signing secret, then `JWT_SECRET_PREVIOUS`: the default keys of unsubscribe links
    /// (`UNSUBSCRIBE_SECRET` aside; see `unsubscribe::Keys`).
    secrets: Vec<SecretSlice<u8>>,
}

impl Tokens {
    /// Uses `JWT_SECRET` (or a random secret, with a warning) and `JWT_SECRET_PREVIOUS`.
    pub fn from_config(config: &Config) -> Tokens {
        let secret = match &config.jwt_secret {
            Some(s) => s.expose_secret().as_bytes().to_vec(),
            None => {
                tracing::warn!(
                    "JWT_SECRET is not set: using a random secret, so tokens stop working when the process restarts"
                );
                use rand::RngCore;
                let mut bytes = vec![0u8; 32];
                rand::thread_rng().fill_bytes(&mut bytes);
                bytes
            }
        };
        let mut decoding = vec![DecodingKey::from_secret(&secret)];
        let mut secrets = vec![SecretSlice::from(secret.clone())];
        if let Some(prev) = &config.jwt_secret_previous {
            decoding.push(DecodingKey::from_secret(prev.expose_secret().as_bytes()));
            secrets.push(SecretSlice::from(prev.expose_secret().as_bytes().to_vec()));
        }
        // HS256 only: a token with any other `alg`, `none` included, fails validation.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = LEEWAY_SECS;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["sub", "iat", "nbf", "exp", "iss", "aud"]);
        Tokens {
            encoding: EncodingKey::from_secret(&secret),
            decoding,
            validation,
            ttl_secs: config.jwt_ttl_secs,
            secrets,
        }
    }

    /// The secret that signs: `JWT_SECRET`, or this process's random one.
    pub fn signing_secret(&self) -> &[u8] {
        self.secrets[0].expose_secret()
    }

    /// Every secret that verifies, the signing one first, then `JWT_SECRET_PREVIOUS`.
    pub fn verifying_secrets(&self) -> Vec<&[u8]> {
        self.secrets.iter().map(|s| s.expose_secret()).collect()
    }

    /// `JWT_SECRET_PREVIOUS`, if set.
    pub fn previous_secret(&self) -> Option<&[u8]> {
        self.secrets.get(1).map(|s| s.expose_secret())
    }

    pub fn issue(&self, user_id: i64, generation: i64) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: user_id.to_string(),
            iat: now,
            nbf: now,
            exp: now + self.ttl_secs as i64,
            iss: ISSUER.to_string(),
            aud: AUDIENCE.to_string(),
            generation,
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    /// The token's user id and generation, if the token is valid under any current key.
    pub fn verify(&self, token: &str) -> Option<(i64, i64)> {
        let claims = self
            .decoding
            .iter()
            .find_map(|key| jsonwebtoken::decode::<Claims>(token, key, &self.validation).ok())?
            .claims;
        // A token "issued" in the future is forged or from a badly skewed clock.
        if claims.iat > chrono::Utc::now().timestamp() + LEEWAY_SECS as i64 {
            return None;
        }
        Some((claims.sub.parse().ok()?, claims.generation))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Config {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_map(&map, false).unwrap()
    }

    #[test]
    fn passwords_round_trip() {
        let hash = hash_password("correct horse battery").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("correct horse battery", &hash));
        assert!(!verify_password("correct horse batter", &hash));
        assert!(!verify_password("x", "not a hash"));
    }

    #[test]
    fn tokens_verify_and_rotate() {
        let old = Tokens::from_config(&config(&[(
            "JWT_SECRET",
            "old-secret-old-secret-old-secret!!",
        )]));
        let token = old.issue(7, 0).unwrap();
        assert_eq!(old.verify(&token), Some((7, 0)));
        let rotated = Tokens::from_config(&config(&[
            ("JWT_SECRET", "new-secret-new-secret-new-secret!!"),
            ("JWT_SECRET_PREVIOUS", "old-secret-old-secret-old-secret!!"),
        ]));
        assert_eq!(rotated.verify(&token), Some((7, 0)));
        let other = Tokens::from_config(&config(&[(
            "JWT_SECRET",
            "new-secret-new-secret-new-secret!!",
        )]));
        assert_eq!(other.verify(&token), None);
    }

    #[test]
    fn other_algorithms_and_claims_are_refused() {
        let tokens = Tokens::from_config(&config(&[(
            "JWT_SECRET",
            "a-secret-a-secret-a-secret-a-secret",
        )]));
        let secret = EncodingKey::from_secret(b"a-secret-a-secret-a-secret-a-secret");
        let now = chrono::Utc::now().timestamp();
        let good = Claims {
            sub: "1".into(),
            iat: now,
            nbf: now,
            exp: now + 600,
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            generation: 0,
        };
        let hs512 = jsonwebtoken::encode(&Header::new(Algorithm::HS512), &good, &secret).unwrap();
        assert_eq!(tokens.verify(&hs512), None);
        let wrong_aud = Claims {
            aud: "other".into(),
            ..clone(&good)
        };
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &wrong_aud, &secret).unwrap();
        assert_eq!(tokens.verify(&t), None);
        let expired = Claims {
            exp: now - 120,
            ..clone(&good)
        };
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &expired, &secret).unwrap();
        assert_eq!(tokens.verify(&t), None);
        let not_yet = Claims {
            nbf: now + 120,
            ..clone(&good)
        };
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &not_yet, &secret).unwrap();
        assert_eq!(tokens.verify(&t), None);
        let wrong_iss = Claims {
            iss: "x".into(),
            ..clone(&good)
        };
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &wrong_iss, &secret).unwrap();
        assert_eq!(tokens.verify(&t), None);
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &good, &secret).unwrap();
        assert_eq!(tokens.verify(&t), Some((1, 0)));
    }

    fn clone(c: &Claims) -> Claims {
        Claims {
            sub: c.sub.clone(),
            iat: c.iat,
            nbf: c.nbf,
            exp: c.exp,
            iss: c.iss.clone(),
            aud: c.aud.clone(),
            generation: c.generation,
        }
    }
}
