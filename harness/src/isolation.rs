//! Network isolation for agents that phone home: the checking process moves into a fresh
//! network namespace with only loopback up, before it starts any thread, so the mock Provider
//! and every agent it starts share a loopback and nothing else.

/// Enters a loopback-only network namespace. Must run while the process has one thread.
/// `Err` says why the kernel (or a missing `ip`) did not allow it.
pub fn enter_loopback_only() -> Result<(), String> {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|error| format!("cannot create a network namespace: {error}"))?;
    let status = std::process::Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .map_err(|error| format!("cannot run `ip link set lo up`: {error}"))?;
    if status.success() { Ok(()) } else { Err(format!("`ip link set lo up` failed: {status}")) }
}
