//! `EMAIL_BACKEND=ses`: Amazon SES through the official SDK (API v2, `SendEmail`), the message
//! sent raw, built exactly as for SMTP, so that its `Message-ID`, `X-Jobboard-Event-Id` and body
//! are ours. Credentials, region and endpoint come from the same AWS configuration as SQS, with
//! `AWS_ENDPOINT_URL_SESV2` for SES alone.
//!
//! Errors are classified as docs/guarantee.md asks: SES refusing this message (`MessageRejected`
//! for its recipient or its content, a bad address) is its dead letter; SES refusing the sender
//! (throttling, sending paused, an account suspended, wrong or expired credentials, permissions,
//! a sender identity that is not verified) or not being reachable is an outage of the mail
//! service.
//!
//! One attempt is one send: the SDK never retries `SendEmail` by itself, since SES may have
//! accepted a request whose answer was lost. A call that failed once its request could have been
//! written (a timeout, a connection dropped before the answer, an answer that cannot be read)
//! has an unknown outcome; only a failure to connect (refused, DNS, TLS, a connection that did
//! not open in time), or one before the request reached the HTTP client (no credentials to sign
//! it with), is certainly unsent.

use super::{Mailer, mask_addresses};
use crate::domain::mail::SendError;
use async_trait::async_trait;
use aws_sdk_sesv2::Client;
use aws_sdk_sesv2::error::{ConnectorError, DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_sesv2::operation::send_email::SendEmailError;
use aws_sdk_sesv2::primitives::Blob;
use aws_sdk_sesv2::types::{Destination, EmailContent, RawMessage};
use lettre::Message;
use std::time::Duration;

/// Error codes that refuse the sender, whatever the message: throttling, the account, the
/// credentials, the permissions.
const SENDER_REFUSALS: [&str; 16] = [
    "Throttling",
    "ThrottlingException",
    "TooManyRequestsException",
    "LimitExceededException",
    "SendingPausedException",
    "AccountSendingPausedException",
    "AccountSuspendedException",
    "UnrecognizedClientException",
    "InvalidClientTokenId",
    "ExpiredToken",
    "ExpiredTokenException",
    "SignatureDoesNotMatch",
    "InvalidSignatureException",
    "AccessDenied",
    "AccessDeniedException",
    "ServiceUnavailable",
];

pub struct SesMailer {
    client: Client,
}

impl SesMailer {
    /// A client from the usual AWS environment (`AWS_REGION`, `AWS_ENDPOINT_URL`, credentials),
    /// with `endpoint_url` for SES alone.
    pub async fn connect(endpoint_url: Option<&str>, timeout: Duration) -> SesMailer {
        let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        SesMailer::with_config(&shared, endpoint_url, timeout)
    }

    /// A client from `shared`, with `endpoint_url` for SES alone. A call is one try with the
    /// send's deadline, `timeout`; its connection must open within half of it (docs/guarantee.md: a
    /// session that does not open in time is an outage).
    pub fn with_config(
        shared: &aws_config::SdkConfig,
        endpoint_url: Option<&str>,
        timeout: Duration,
    ) -> SesMailer {
        let mut config = aws_sdk_sesv2::config::Builder::from(shared)
            .timeout_config(
                aws_sdk_sesv2::config::timeout::TimeoutConfig::builder()
                    .connect_timeout(timeout / 2)
                    .operation_attempt_timeout(timeout)
                    .operation_timeout(timeout)
                    .build(),
            )
            .retry_config(aws_sdk_sesv2::config::retry::RetryConfig::disabled());
        if let Some(endpoint) = endpoint_url {
            config = config.endpoint_url(endpoint);
        }
        SesMailer {
            client: Client::from_conf(config.build()),
        }
    }
}

#[async_trait]
impl Mailer for SesMailer {
    fn kind(&self) -> &'static str {
        "ses"
    }

    async fn send(&self, message: &Message) -> Result<(), SendError> {
        let envelope = message.envelope();
        let raw = RawMessage::builder()
            .data(Blob::new(message.formatted()))
            .build()
            .map_err(|e| SendError::Permanent(format!("building the SES message: {e}")))?;
        let to: Vec<String> = envelope.to().iter().map(|a| a.to_string()).collect();
        let mut call = self
            .client
            .send_email()
            .destination(Destination::builder().set_to_addresses(Some(to)).build())
            .content(EmailContent::builder().raw(raw).build());
        let from = envelope.from().map(|a| a.to_string());
        if let Some(from) = &from {
            call = call.from_email_address(from);
        }
        call.send()
            .await
            .map(|_| ())
            .map_err(|e| classify(e, from.as_deref()))
    }
}

/// What an SES error means for the message sent from `from` (see the module's documentation).
fn classify<R: std::fmt::Debug>(e: SdkError<SendEmailError, R>, from: Option<&str>) -> SendError {
    let text = mask_addresses(&DisplayErrorContext(&e).to_string());
    match &e {
        // The request could not be built or signed (no credentials): nothing went out.
        SdkError::ConstructionFailure(_) => SendError::Unavailable(text),
        SdkError::DispatchFailure(failure) if never_sent(failure.as_connector_error()) => {
            SendError::Unavailable(text)
        }
        SdkError::ServiceError(service) => match service.err() {
            SendEmailError::MessageRejected(rejected) => {
                if refuses_sender(rejected.message().unwrap_or_default(), from) {
                    SendError::Unavailable(text)
                } else {
                    SendError::Permanent(text)
                }
            }
            SendEmailError::BadRequestException(_) => SendError::Permanent(text),
            // Throttling, the account, the sender's configuration: no message can go until
            // SES lets the sender send again or the configuration is fixed.
            SendEmailError::TooManyRequestsException(_)
            | SendEmailError::LimitExceededException(_)
            | SendEmailError::SendingPausedException(_)
            | SendEmailError::AccountSuspendedException(_)
            | SendEmailError::MailFromDomainNotVerifiedException(_)
            | SendEmailError::NotFoundException(_) => SendError::Unavailable(text),
            other => match other.code() {
                Some(code) if SENDER_REFUSALS.contains(&code) => SendError::Unavailable(text),
                // SES answered that it failed (a 5xx): this message failed for now.
                Some("InternalFailure" | "InternalServerError") | None => {
                    SendError::Transient(text)
                }
                // Any other refusal named by SES (such as an invalid address) is this
                // message's.
                Some(_) => SendError::Permanent(text),
            },
        },
        // Any other failure (a dispatch failure once the request could have been written, the
        // deadline passed, SES's answer unreadable, a kind of failure the SDK adds later): SES
        // may have the message.
        _ => SendError::Unknown(text),
    }
}

/// Whether a failed dispatch certainly never wrote the request. The SDK's HTTP client (hyper's)
/// puts its own error in every failure of its own, and says whether the connection could not be
/// made (refused, DNS, TLS, or not open within the connect timeout). A failure without it came
/// before the request reached the client (no credentials to sign with, a signing error); one
/// that timed out without it may be a read's, after the request went out.
fn never_sent(failure: Option<&ConnectorError>) -> bool {
    let Some(connector) = failure else {
        return false;
    };
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(connector);
    while let Some(error) = next {
        if let Some(hyper) = error.downcast_ref::<hyper_util::client::legacy::Error>() {
            return hyper.is_connect();
        }
        next = error.source();
    }
    !connector.is_timeout()
}

/// Whether SES's `MessageRejected` refuses the sender rather than this message: the sender's
/// identity is not verified (SES names the identities that failed: "Email address is not
/// verified. The following identities failed the check in region …: jobs@example.com"), or it
/// may not send from it ("Did not have authority to send from email …"). A recipient named
/// alone (an unverified recipient while the account is in the sandbox) is this message's.
fn refuses_sender(reason: &str, from: Option<&str>) -> bool {
    let reason = reason.to_ascii_lowercase();
    if reason.contains("send from") || reason.contains("sending from") {
        return true;
    }
    let Some(from) = from.map(str::to_ascii_lowercase) else {
        return false;
    };
    let domain = from.rsplit_once('@').map(|(_, d)| d.to_string());
    reason
        .split(|c: char| c.is_whitespace() || ",;:<>()[]\"'".contains(c))
        .map(|word| word.trim_end_matches('.'))
        .any(|word| word == from || domain.as_deref() == Some(word))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sesv2::error::ErrorMetadata;
    use aws_sdk_sesv2::types::error::{
        AccountSuspendedException, BadRequestException, LimitExceededException, MessageRejected,
        SendingPausedException, TooManyRequestsException,
    };

    const FROM: &str = "jobs@acme.example";

    fn service(e: SendEmailError) -> SendError {
        classify(SdkError::service_error(e, ()), Some(FROM))
    }

    fn rejected(reason: &str) -> SendError {
        service(SendEmailError::MessageRejected(
            MessageRejected::builder().message(reason).build(),
        ))
    }

    fn named(code: &str) -> SendError {
        service(SendEmailError::generic(
            ErrorMetadata::builder()
                .code(code)
                .message("from SES")
                .build(),
        ))
    }

    #[test]
    fn throttling_and_a_refused_account_are_outages() {
        let outages = [
            service(SendEmailError::TooManyRequestsException(
                TooManyRequestsException::builder()
                    .message("Maximum sending rate exceeded.")
                    .build(),
            )),
            service(SendEmailError::LimitExceededException(
                LimitExceededException::builder()
                    .message("Daily message quota exceeded.")
                    .build(),
            )),
            service(SendEmailError::SendingPausedException(
                SendingPausedException::builder().build(),
            )),
            service(SendEmailError::AccountSuspendedException(
                AccountSuspendedException::builder().build(),
            )),
            named("Throttling"),
            named("AccountSendingPausedException"),
        ];
        for outage in outages {
            assert!(matches!(outage, SendError::Unavailable(_)), "{outage:?}");
        }
    }

    /// No message can go from an identity SES has not verified: an outage, whatever the
    /// recipient.
    #[test]
    fn an_unverified_sender_is_an_outage() {
        for reason in [
            "Email address is not verified. The following identities failed the check in \
             region US-EAST-1: jobs@acme.example",
            "Email address is not verified. The following identities failed the check in \
             region EU-WEST-1: cody@mail.example, Jobs@Acme.example.",
            "Email address is not verified. The following identities failed the check in \
             region US-EAST-1: acme.example",
            "Did not have authority to send from email jobs@acme.example",
        ] {
            let e = rejected(reason);
            assert!(matches!(e, SendError::Unavailable(_)), "{reason}: {e:?}");
        }
    }

    /// SES's refusals of the sender's authority are the sender's whatever they name: with no
    /// envelope sender to compare, the words alone decide.
    #[test]
    fn a_refusal_of_sending_from_the_identity_needs_no_address() {
        for reason in [
            "Did not have authority to send from email jobs@acme.example",
            "User is not authorized to perform ses:SendEmail when sending from this identity",
        ] {
            assert!(refuses_sender(reason, None), "{reason}");
        }
        assert!(!refuses_sender(
            "Email address is not verified: cody@mail.example",
            None
        ));
    }

    /// A request that could not be built or signed never left: an outage.
    #[test]
    fn a_request_that_could_not_be_built_is_an_outage() {
        let e = classify::<()>(
            SdkError::construction_failure("no credentials to sign with"),
            Some(FROM),
        );
        assert!(matches!(e, SendError::Unavailable(_)), "{e:?}");
        let e = classify::<()>(
            SdkError::response_error("an unreadable answer", ()),
            Some(FROM),
        );
        assert!(matches!(e, SendError::Unknown(_)), "{e:?}");
    }

    #[test]
    fn wrong_or_expired_credentials_are_outages() {
        for code in [
            "UnrecognizedClientException",
            "InvalidClientTokenId",
            "ExpiredTokenException",
            "SignatureDoesNotMatch",
            "AccessDeniedException",
        ] {
            let e = named(code);
            assert!(matches!(e, SendError::Unavailable(_)), "{code}: {e:?}");
        }
    }

    /// A dispatch failure that never reached the HTTP client (its error is not in the chain)
    /// was never sent: an outage; one that timed out may have been. The HTTP client's own
    /// failures, before and after the request went out, are the SES table's
    /// (tests/model/ses_outcomes.rs), made for real.
    #[test]
    fn a_failure_before_the_http_client_is_an_outage_a_timeout_is_unknown() {
        let e = classify::<()>(
            SdkError::dispatch_failure(ConnectorError::other("no identity".into(), None)),
            Some(FROM),
        );
        assert!(matches!(e, SendError::Unavailable(_)), "{e:?}");
        let e = classify::<()>(
            SdkError::dispatch_failure(ConnectorError::timeout("read timed out".into())),
            Some(FROM),
        );
        assert!(matches!(e, SendError::Unknown(_)), "{e:?}");
        let e = classify::<()>(SdkError::timeout_error("operation timed out"), Some(FROM));
        assert!(matches!(e, SendError::Unknown(_)), "{e:?}");
    }

    #[test]
    fn a_refused_message_is_its_dead_letter_with_the_reason() {
        // The account is in the sandbox and the recipient is not verified: this message's.
        let e = rejected(
            "Email address is not verified. The following identities failed the check in \
             region US-EAST-1: cody@mail.example",
        );
        match e {
            SendError::Permanent(reason) => {
                assert!(reason.contains("not verified"), "{reason}");
                assert!(!reason.contains("cody@mail.example"), "masked: {reason}");
            }
            other => panic!("{other:?}"),
        }
        // An address at the sender's domain is not the sender.
        let e = rejected("Email address is not verified: ann@acme.example.");
        assert!(matches!(e, SendError::Permanent(_)), "{e:?}");
        let e = service(SendEmailError::BadRequestException(
            BadRequestException::builder()
                .message("bad address")
                .build(),
        ));
        assert!(matches!(e, SendError::Permanent(_)), "{e:?}");
        assert!(matches!(
            named("InvalidParameterValue"),
            SendError::Permanent(_)
        ));
    }

    #[test]
    fn a_server_error_fails_the_message_for_now() {
        assert!(matches!(named("InternalFailure"), SendError::Transient(_)));
    }
}
