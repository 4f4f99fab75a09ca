//! `gauntlet-contain`: what every process gauntlet starts for a scenario starts through, so that
//! all it starts ends with the scenario; glue over `gauntlet::driver::containment::helper`.

fn main() -> std::process::ExitCode {
    gauntlet::driver::containment::helper::main(std::env::args_os().skip(1).collect())
}
