//! The application status workflow: the one table of allowed moves.

use std::fmt;

/// Where an application stands.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ApplicationStatus {
    Submitted,
    Reviewing,
    Interview,
    Offered,
    Hired,
    Rejected,
    Withdrawn,
}

/// Who asks for a move: the company's side or the candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    Employer,
    Candidate,
}

/// A move the workflow does not allow; its message names the moves that are allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionError {
    pub from: ApplicationStatus,
    pub to: ApplicationStatus,
    pub allowed: Vec<ApplicationStatus>,
}

impl fmt::Display for TransitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.from == self.to && self.from.is_final() {
            write!(
                f,
                "the application is already {}, a final status: nothing can change it",
                self.from
            )
        } else if self.allowed.is_empty() {
            write!(
                f,
                "cannot move from {} to {}: {} is final, no move is allowed",
                self.from, self.to, self.from
            )
        } else {
            let allowed: Vec<&str> = self.allowed.iter().map(|s| s.as_str()).collect();
            write!(
                f,
                "cannot move from {} to {}; allowed moves from {}: {}",
                self.from,
                self.to,
                self.from,
                allowed.join(", ")
            )
        }
    }
}

impl ApplicationStatus {
    pub const ALL: [ApplicationStatus; 7] = [
        ApplicationStatus::Submitted,
        ApplicationStatus::Reviewing,
        ApplicationStatus::Interview,
        ApplicationStatus::Offered,
        ApplicationStatus::Hired,
        ApplicationStatus::Rejected,
        ApplicationStatus::Withdrawn,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApplicationStatus::Submitted => "submitted",
            ApplicationStatus::Reviewing => "reviewing",
            ApplicationStatus::Interview => "interview",
            ApplicationStatus::Offered => "offered",
            ApplicationStatus::Hired => "hired",
            ApplicationStatus::Rejected => "rejected",
            ApplicationStatus::Withdrawn => "withdrawn",
        }
    }

    pub fn parse(s: &str) -> Option<ApplicationStatus> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// `hired`, `rejected` and `withdrawn` end the workflow.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ApplicationStatus::Hired | ApplicationStatus::Rejected | ApplicationStatus::Withdrawn
        )
    }

    /// The moves `actor` may make from `self`. This is the whole workflow.
    pub fn allowed_moves(self, actor: Actor) -> Vec<ApplicationStatus> {
        use ApplicationStatus::*;
        match actor {
            Actor::Employer => match self {
                Submitted => vec![Reviewing, Rejected],
                Reviewing => vec![Interview, Rejected],
                Interview => vec![Offered, Rejected],
                Offered => vec![Hired, Rejected],
                Hired | Rejected | Withdrawn => vec![],
            },
            Actor::Candidate => {
                if self.is_final() {
                    vec![]
                } else {
                    vec![Withdrawn]
                }
            }
        }
    }

    /// Checks a move. `Ok(false)` means the status is already `to` (and not final): nothing to
    /// do, no event. A final status refuses every move, setting it again included.
    pub fn check_move(self, to: ApplicationStatus, actor: Actor) -> Result<bool, TransitionError> {
        if self == to && !self.is_final() {
            return Ok(false);
        }
        let allowed = self.allowed_moves(actor);
        if allowed.contains(&to) {
            Ok(true)
        } else {
            Err(TransitionError {
                from: self,
                to,
                allowed,
            })
        }
    }
}

impl fmt::Display for ApplicationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::ApplicationStatus::*;
    use super::*;

    #[test]
    fn employer_moves_follow_the_table() {
        let table = [
            (Submitted, vec![Reviewing, Rejected]),
            (Reviewing, vec![Interview, Rejected]),
            (Interview, vec![Offered, Rejected]),
            (Offered, vec![Hired, Rejected]),
            (Hired, vec![]),
            (Rejected, vec![]),
            (Withdrawn, vec![]),
        ];
        for (from, allowed) in table {
            for to in ApplicationStatus::ALL {
                let got = from.check_move(to, Actor::Employer);
                if to == from && !from.is_final() {
                    assert_eq!(got, Ok(false), "{from} -> {to}");
                } else if allowed.contains(&to) {
                    assert_eq!(got, Ok(true), "{from} -> {to}");
                } else {
                    let err = got.expect_err("move must be refused");
                    assert_eq!(err.allowed, allowed);
                }
            }
        }
    }

    #[test]
    fn employers_can_never_withdraw() {
        for from in ApplicationStatus::ALL {
            if from != Withdrawn {
                assert!(from.check_move(Withdrawn, Actor::Employer).is_err());
            }
        }
    }

    #[test]
    fn candidate_withdraws_from_any_non_final_status() {
        for from in ApplicationStatus::ALL {
            let got = from.check_move(Withdrawn, Actor::Candidate);
            if from.is_final() {
                assert!(got.is_err(), "{from} is final");
            } else {
                assert_eq!(got, Ok(true));
            }
        }
    }

    #[test]
    fn candidates_make_no_other_move() {
        assert!(Submitted.check_move(Reviewing, Actor::Candidate).is_err());
        assert!(Offered.check_move(Hired, Actor::Candidate).is_err());
    }

    #[test]
    fn error_names_the_allowed_moves() {
        let err = Submitted.check_move(Hired, Actor::Employer).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("reviewing") && text.contains("rejected"),
            "{text}"
        );
        let err = Hired.check_move(Rejected, Actor::Employer).unwrap_err();
        assert!(err.to_string().contains("final"));
        // Setting a final status again is refused too: nothing changes a final application.
        let err = Withdrawn
            .check_move(Withdrawn, Actor::Candidate)
            .unwrap_err();
        assert!(err.to_string().contains("already withdrawn"), "{err}");
        assert!(Hired.check_move(Hired, Actor::Employer).is_err());
    }

    #[test]
    fn parse_round_trips() {
        for s in ApplicationStatus::ALL {
            assert_eq!(ApplicationStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(ApplicationStatus::parse("Hired"), None);
    }
}
