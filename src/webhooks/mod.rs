//! Webhooks' rules that touch the network: which URLs and addresses a delivery may reach
//! ([`address`]), and the Standard Webhooks signatures ([`sign`]).

pub mod address;
pub mod deliver;
pub mod sign;
