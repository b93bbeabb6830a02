//! Finding the pieces the front end puts together: the shim library, `java` and `jcmd`.

use std::env;
use std::path::{Path, PathBuf};

/// The shim library's file name.
pub const SHIM_FILE: &str = "libjvmpi_shim.so";

/// `libjvmpi_shim.so`: `--shim` (the file, or a directory holding it), else next to this binary
/// (`target/<profile>/` when built with cargo), else `../lib/` of this binary's directory (an
/// installed layout such as `/usr/local/bin` + `/usr/local/lib`). The path is absolute, since a
/// JVM attached to with `jcmd` resolves relative paths against its own working directory.
pub fn shim(given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = given {
        let file = if p.is_dir() { p.join(SHIM_FILE) } else { p.to_path_buf() };
        if !file.is_file() {
            return Err(format!("--shim {}: no such file", file.display()));
        }
        return absolute(&file);
    }
    let exe = env::current_exe()
        .map_err(|e| format!("cannot tell where this program is ({e}); pass --shim <path to {SHIM_FILE}>"))?;
    let exe = exe.canonicalize().unwrap_or(exe);
    let dir = exe.parent().unwrap_or(Path::new("/"));
    let candidates = [dir.join(SHIM_FILE), dir.join("../lib").join(SHIM_FILE)];
    for c in &candidates {
        if c.is_file() {
            return absolute(c);
        }
    }
    Err(format!(
        "cannot find {SHIM_FILE}: it is not next to {} nor in {}; pass --shim <path to {SHIM_FILE}> \
         (`cargo build --release` puts it in target/release/)",
        exe.display(),
        dir.join("../lib").display()
    ))
}

/// An absolute form of `p` (symbolic links resolved when possible).
pub fn absolute(p: &Path) -> Result<PathBuf, String> {
    match p.canonicalize() {
        Ok(c) => Ok(c),
        Err(_) => std::path::absolute(p).map_err(|e| format!("{}: {e}", p.display())),
    }
}

/// `name` on `PATH`, if it is there.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path).map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Where a tool was found, for messages.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub how: String,
}

/// The `java` to use: `--java`, else `$JAVA_HOME/bin/java`, else `java` on `PATH`.
pub fn java(given: Option<&Path>) -> Result<Found, String> {
    if let Some(p) = given {
        let s = p.to_string_lossy();
        let path = if s.contains('/') { Some(p.to_path_buf()).filter(|p| is_executable(p)) } else { on_path(&s) };
        return path
            .map(|path| Found { path, how: "--java".into() })
            .ok_or_else(|| format!("--java {}: not an executable file", p.display()));
    }
    if let Some(home) = env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
        let p = PathBuf::from(&home).join("bin/java");
        if is_executable(&p) {
            return Ok(Found { path: p, how: "JAVA_HOME".into() });
        }
        return Err(format!(
            "JAVA_HOME is {} but it has no bin/java; fix JAVA_HOME or pass --java <path>",
            PathBuf::from(home).display()
        ));
    }
    on_path("java").map(|path| Found { path, how: "PATH".into() }).ok_or_else(|| {
        "no java found: JAVA_HOME is not set and there is no java on PATH; pass --java <path> \
         or give the launcher after `--` (`-- /path/to/java -cp app Main`)"
            .to_string()
    })
}

/// The `jcmd` to use: `--jcmd`, else the one next to the `java` of `--java`/`JAVA_HOME`/`PATH`
/// (following symbolic links such as `/usr/bin/java`), else `jcmd` on `PATH`.
pub fn jcmd(given: Option<&Path>, java_given: Option<&Path>) -> Result<Found, String> {
    if let Some(p) = given {
        return if is_executable(p) {
            Ok(Found { path: p.to_path_buf(), how: "--jcmd".into() })
        } else {
            Err(format!("--jcmd {}: not an executable file", p.display()))
        };
    }
    let java = java(java_given);
    if let Ok(j) = &java {
        let mut dirs = vec![];
        if let Some(d) = j.path.parent() {
            dirs.push(d.to_path_buf());
        }
        if let Some(d) = j.path.canonicalize().ok().and_then(|c| c.parent().map(Path::to_path_buf)) {
            dirs.push(d);
        }
        for d in dirs {
            let p = d.join("jcmd");
            if is_executable(&p) {
                return Ok(Found { path: p, how: format!("next to the java of {}", j.how) });
            }
        }
        if java_given.is_some() || env::var_os("JAVA_HOME").is_some_and(|h| !h.is_empty()) {
            return Err(format!(
                "no jcmd next to {} (found by {}): this Java runtime ships without jcmd (jlink-made \
                 runtimes, such as some of those pip packages install, often do); point JAVA_HOME or \
                 --java at a full JDK, or pass --jcmd <path>",
                j.path.display(),
                j.how
            ));
        }
    }
    on_path("jcmd").map(|path| Found { path, how: "PATH".into() }).ok_or_else(|| match java {
        Ok(j) => format!(
            "no jcmd found: none next to {} and none on PATH; this Java runtime ships without jcmd \
             (jlink-made runtimes often do): use a full JDK (JAVA_HOME or --java) or pass --jcmd <path>",
            j.path.display()
        ),
        Err(_) => "no jcmd found: JAVA_HOME is not set and there is no jcmd or java on PATH; \
                   pass --jcmd <path> or set JAVA_HOME to a JDK"
            .into(),
    })
}

/// The `libjvm.so` of the JDK whose launcher is `java` (`lib/server/`, or another VM flavour).
pub fn libjvm_of(java: &Path) -> Option<PathBuf> {
    let real = java.canonicalize().ok()?;
    let home = real.parent()?.parent()?;
    ["lib/server", "lib/client", "lib/minimal", "lib/zero", "jre/lib/amd64/server", "jre/lib/aarch64/server"]
        .iter()
        .map(|d| home.join(d).join("libjvm.so"))
        .find(|p| p.is_file())
}
