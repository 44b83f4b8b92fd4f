//! `EMAIL_BACKEND=ses`: Amazon SES through the official SDK (API v2, `SendEmail`), the message
//! sent raw, built exactly as for SMTP, so that its `Message-ID`, `X-Jobboard-Event-Id` and body
//! are ours. Credentials, region and endpoint come from the same AWS configuration as SQS, with
//! `AWS_ENDPOINT_URL_SESV2` for SES alone.
//!
//! Errors are classified as CONTRACT.md §6 asks: SES refusing this message (`MessageRejected`,
//! a bad address) is its dead letter; SES refusing the sender (throttling, sending paused, an
//! account suspended, wrong or expired credentials, permissions) or not being reachable is an
//! outage of the mail service.
//!
//! One attempt is one send: the SDK never retries `SendEmail` by itself, since SES may have
//! accepted a request whose answer was lost. A call that failed once its request could have been
//! written (a timeout, a connection dropped before the answer, an answer that cannot be read)
//! has an unknown outcome; only a failure to connect (refused, DNS, TLS, a connection that did
//! not open in time) is certainly unsent.

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
    /// send's deadline, `timeout`; its connection must open within half of it (CONTRACT.md §6: a
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
        if let Some(from) = envelope.from() {
            call = call.from_email_address(from.to_string());
        }
        call.send().await.map(|_| ()).map_err(classify)
    }
}

/// What an SES error means for the message (see the module's documentation).
fn classify<R: std::fmt::Debug>(e: SdkError<SendEmailError, R>) -> SendError {
    let text = mask_addresses(&DisplayErrorContext(&e).to_string());
    match &e {
        // The request could not be built or signed (no credentials): nothing went out.
        SdkError::ConstructionFailure(_) => SendError::Unavailable(text),
        SdkError::DispatchFailure(failure) if never_sent(failure.as_connector_error()) => {
            SendError::Unavailable(text)
        }
        // The connection failed once the request could have been written, the deadline
        // passed, or SES's answer cannot be read: SES may have the message.
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_) => {
            SendError::Unknown(text)
        }
        SdkError::ServiceError(service) => match service.err() {
            SendEmailError::MessageRejected(_) | SendEmailError::BadRequestException(_) => {
                SendError::Permanent(text)
            }
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
        _ => SendError::Unknown(text),
    }
}

/// Whether a failed dispatch certainly never wrote the request: the connection itself could
/// not be made (refused, DNS, TLS, or not open within the connect timeout). The SDK's HTTP
/// client is hyper's, whose error says so.
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
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sesv2::error::ErrorMetadata;
    use aws_sdk_sesv2::types::error::{
        AccountSuspendedException, BadRequestException, LimitExceededException, MessageRejected,
        SendingPausedException, TooManyRequestsException,
    };

    fn service(e: SendEmailError) -> SendError {
        classify(SdkError::service_error(e, ()))
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

    /// Only the HTTP client's own word that the connection never opened makes a failed call
    /// unsent (that case runs against a closed port in tests/api/ses.rs): an I/O error after the
    /// connection opened may have lost an answer to a request SES took.
    #[test]
    fn a_dropped_connection_or_a_timeout_is_an_unknown_outcome() {
        let e = classify::<()>(SdkError::dispatch_failure(ConnectorError::io(
            "connection reset by peer".into(),
        )));
        assert!(matches!(e, SendError::Unknown(_)), "{e:?}");
        let e = classify::<()>(SdkError::timeout_error("operation timed out"));
        assert!(matches!(e, SendError::Unknown(_)), "{e:?}");
    }

    #[test]
    fn a_refused_message_is_its_dead_letter_with_the_reason() {
        let e = service(SendEmailError::MessageRejected(
            MessageRejected::builder()
                .message("Email address is not verified: jobs@acme.example")
                .build(),
        ));
        match e {
            SendError::Permanent(reason) => {
                assert!(reason.contains("not verified"), "{reason}");
                assert!(!reason.contains("jobs@acme.example"), "masked: {reason}");
            }
            other => panic!("{other:?}"),
        }
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
