//! Records the git commit ringside was built from (results carry it).
use std::process::Command;

fn main() {
    let git = Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=12"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RINGSIDE_GIT={git}");
    // Where git keeps them: `.git/` in a clone, elsewhere in a worktree (where `.git` is a
    // file, and a path that does not exist would rerun this script on every build).
    for name in ["HEAD", "index"] {
        let path = Command::new("git")
            .args(["rev-parse", "--git-path", name])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| format!(".git/{name}"));
        println!("cargo:rerun-if-changed={path}");
    }
}
