//! Network isolation for agents that phone home: the checking process moves into a fresh
//! network namespace with only loopback up, before it starts any thread, so the mock Provider
//! and every agent it starts share a loopback and nothing else.

/// Why the process could not enter a loopback-only network namespace.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    /// The kernel refused a new network namespace (no privilege, no user namespaces).
    #[error("cannot create a network namespace: {source}")]
    Unshare {
        /// The kernel's answer.
        source: nix::Error,
    },
    /// `ip` could not be run.
    #[error("cannot run `ip link set lo up`: {source}")]
    Ip {
        /// Why.
        source: std::io::Error,
    },
    /// `ip link set lo up` ran and failed.
    #[error("`ip link set lo up` failed: {status}")]
    LoopbackDown {
        /// How it exited.
        status: std::process::ExitStatus,
    },
}

/// Enters a loopback-only network namespace. Must run while the process has one thread.
/// `Err` says why the kernel (or a missing `ip`) did not allow it.
pub fn enter_loopback_only() -> Result<(), IsolationError> {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).map_err(|source| IsolationError::Unshare { source })?;
    let status = std::process::Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .map_err(|source| IsolationError::Ip { source })?;
    if status.success() { Ok(()) } else { Err(IsolationError::LoopbackDown { status }) }
}
