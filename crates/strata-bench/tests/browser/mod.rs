//! Headless Chromium for the page tests: which binary, and the flags every run takes.

use std::process::Command;

/// The first headless Chromium on the PATH.
pub fn chromium() -> String {
    for name in ["chromium-headless-shell", "chromium", "chromium-browser"] {
        if Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return name.to_string();
        }
    }
    panic!(
        "no headless Chromium found: install Debian's chromium-headless-shell \
         (scripts/install-deps.sh, run by make test, does)"
    );
}

/// Chromium, headless, with nothing reaching for the network (this machine's network is
/// closed: without these flags Chromium keeps trying Google's hosts).
pub fn headless() -> Command {
    let mut cmd = Command::new(chromium());
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ]);
    cmd
}
