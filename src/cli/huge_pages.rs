//! Starting the model in 2 MB pages where the system gives them only on request.
//!
//! Building the model's ONNX Runtime session writes about 250 MB of fresh memory (the
//! int8 weights unfolded into 32-bit floats, then packed for the matrix kernels), and in
//! 4 KB pages the kernel's page faults and page clearing were two thirds of a cold
//! `shortlist search`. glibc's malloc asks for transparent huge pages when the tunable
//! `glibc.malloc.hugetlb=1` is set, which a process reads only when it starts; so a
//! command that loads the model starts itself once more with the tunable added (same
//! process id, arguments and open files), which cut a cold search at 2,000 endpoints from
//! 0.42-0.54 s to 0.29 s (`docs/benchmarks.md`, "Cold start").
//!
//! Only on Linux with glibc, only when the kernel's transparent huge pages are in
//! `madvise` mode (with `always` every process already gets them, with `never` none), and
//! never when `GLIBC_TUNABLES` already says anything about `hugetlb` (which is also what
//! keeps the second start from starting a third). `SHORTLIST_SMALL_PAGES=1` turns it off.

/// Replaces this process with itself plus `glibc.malloc.hugetlb=1` when that helps (see the
/// module); returns when it does not apply or the new start fails, and the command then
/// runs as it is.
pub fn restart_with_huge_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        const TUNABLE: &str = "glibc.malloc.hugetlb=1";
        if std::env::var_os("SHORTLIST_SMALL_PAGES").is_some_and(|v| !v.is_empty()) {
            return;
        }
        let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
        if tunables.contains("glibc.malloc.hugetlb") {
            return;
        }
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !mode.contains("[madvise]") {
            return;
        }
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut args = std::env::args_os();
        let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
        let value = if tunables.is_empty() {
            TUNABLE.to_string()
        } else {
            format!("{tunables}:{TUNABLE}")
        };
        let error = std::process::Command::new(&exe)
            .arg0(arg0)
            .args(args)
            .env("GLIBC_TUNABLES", value)
            .exec();
        tracing::debug!(%error, "could not restart with huge pages; carrying on without");
    }
}
