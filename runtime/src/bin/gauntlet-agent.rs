//! `gauntlet-agent`: placeholder until the ACP agent lands.
fn main() {}
