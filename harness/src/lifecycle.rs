//! Playing a lifecycle scenario (`gauntlet_judge::lifecycle`): the adapter protocol's lines
//! answered by the reference monitor or bridge in process ([`reference`]), or by any other
//! implementation as a command over stdin and stdout ([`adapter`]).

pub mod adapter;
pub mod reference;
