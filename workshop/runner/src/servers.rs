//! The servers a stage's checks run on, so that a learner needs only Rust and a container engine.
//!
//! From stage 3 on the checks also run on PostgreSQL and MariaDB: at `TANDEM_POSTGRES_URL` /
//! `TANDEM_MYSQL_URL` when set, else at the default URLs. When a default server does not answer and a
//! container engine does (podman, else docker; `TANDEM_CONTAINER_ENGINE` chooses), the runner starts that
//! server in a container of its own — `tandem-workshop-postgres` on 127.0.0.1:55432,
//! `tandem-workshop-mariadb` on 127.0.0.1:53306 — once, and keeps it for the next checks;
//! `just workshop-down` removes them. `TANDEM_CONTAINERS=1` uses the containers even when the local
//! servers answer; `TANDEM_CONTAINERS=0` never starts them.
//!
//! The decision is [`plan`], without I/O; [`prepare`] does it.

use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One server engine the checks use.
#[derive(Clone, Copy, Debug)]
pub struct Engine {
    /// As the book names it.
    pub name: &'static str,
    /// The variable that points the checks at it.
    pub var: &'static str,
    /// Where it is when the variable is not set (DESIGN.md's machines).
    pub default_port: u16,
    /// The workshop's container of it.
    pub container: &'static str,
    /// Where that container listens.
    pub container_port: u16,
    /// The port inside the container.
    inner_port: u16,
    /// The image (the official one; `.ci/images` builds one of that name where none can be pulled).
    image: &'static str,
    /// `.ci/images`' name for it.
    recipe: &'static str,
    /// The URL of its `test` database at `port` on 127.0.0.1.
    url: fn(u16) -> String,
    /// The image's environment and arguments.
    env: &'static [&'static str],
    args: &'static [&'static str],
    /// A command inside the container that succeeds once the server answers.
    ready: &'static [&'static str],
}

/// PostgreSQL and MariaDB, as the stages use them.
pub const ENGINES: [Engine; 2] = [
    Engine {
        name: "PostgreSQL",
        var: "TANDEM_POSTGRES_URL",
        default_port: 5432,
        container: "tandem-workshop-postgres",
        container_port: 55432,
        inner_port: 5432,
        image: "docker.io/library/postgres:15",
        recipe: "postgres",
        url: |port| format!("postgres://postgres@127.0.0.1:{port}/test"),
        env: &["POSTGRES_DB=test", "POSTGRES_HOST_AUTH_METHOD=trust"],
        args: &["-c", "fsync=off"],
        ready: &[
            "pg_isready",
            "-q",
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-d",
            "test",
        ],
    },
    Engine {
        name: "MariaDB",
        var: "TANDEM_MYSQL_URL",
        default_port: 3306,
        container: "tandem-workshop-mariadb",
        container_port: 53306,
        inner_port: 3306,
        image: "docker.io/library/mariadb:10.11",
        recipe: "mariadb",
        url: |port| format!("mysql://root@127.0.0.1:{port}/test"),
        env: &[
            "MARIADB_DATABASE=test",
            "MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1",
        ],
        args: &[],
        ready: &[
            "mariadb-admin",
            "ping",
            "-h",
            "127.0.0.1",
            "-uroot",
            "--silent",
        ],
    },
];

/// What to do about one engine.
#[derive(Debug, PartialEq, Eq)]
pub enum Plan {
    /// Nothing: the checks use the variable's URL or the local server.
    AsIs,
    /// Use the workshop's container (start it if it is not running).
    Container,
    /// No server and no way to start one: the checks report it not checked, and this says why.
    Missing(String),
}

/// The rule of the module docs. `var_set`: the engine's variable is set; `containers`: the value of
/// `TANDEM_CONTAINERS`; `local_answers` and `engine` are asked only when the rule needs them (`engine`
/// names the container engine or says why there is none).
pub fn plan(
    e: &Engine,
    var_set: bool,
    containers: Option<&str>,
    local_answers: impl FnOnce() -> bool,
    engine: impl FnOnce() -> Result<String, String>,
) -> Plan {
    if var_set || containers == Some("0") {
        return Plan::AsIs;
    }
    if containers != Some("1") && local_answers() {
        return Plan::AsIs;
    }
    match engine() {
        Ok(_) => Plan::Container,
        Err(_) if containers != Some("1") => Plan::AsIs,
        Err(why) => Plan::Missing(format!(
            "TANDEM_CONTAINERS=1 asks for {} in a container: {why}",
            e.name
        )),
    }
}

/// The container engine: `TANDEM_CONTAINER_ENGINE`, else podman, else docker — one that answers `info`.
fn engine() -> Result<String, String> {
    let candidates = match std::env::var("TANDEM_CONTAINER_ENGINE") {
        Ok(e) if !e.is_empty() => vec![e],
        _ => vec!["podman".to_owned(), "docker".to_owned()],
    };
    for c in &candidates {
        let answers = Command::new(c)
            .args(["info", "--format", "{{.Host.Os}}"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            || Command::new(c)
                .args(["version"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        if answers {
            return Ok(c.clone());
        }
    }
    Err(format!(
        "no container engine answers ({} tried)",
        candidates.join(", ")
    ))
}

fn answers(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
}

fn quiet(engine: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(engine)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{engine}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(format!(
            "`{engine} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The environment a stage's checks run with, and lines for the learner: the containers started or
/// reused, or why a server is missing. `root` is the checkout (for `.ci/images`).
pub fn prepare(root: &Path) -> (Vec<(&'static str, String)>, Vec<String>) {
    let containers = std::env::var("TANDEM_CONTAINERS").ok();
    let mut env = Vec::new();
    let mut notes = Vec::new();
    let mut found: Option<Result<String, String>> = None;
    for e in &ENGINES {
        let var_set = std::env::var(e.var).is_ok_and(|v| !v.is_empty());
        let p = plan(
            e,
            var_set,
            containers.as_deref(),
            || answers(e.default_port),
            || found.get_or_insert_with(engine).clone(),
        );
        match p {
            Plan::AsIs => {}
            Plan::Missing(why) => notes.push(format!("⚠ {why}")),
            Plan::Container => {
                let engine = found.clone().and_then(Result::ok).unwrap_or_default();
                match container(root, &engine, e) {
                    Ok(note) => {
                        env.push((e.var, (e.url)(e.container_port)));
                        notes.push(note);
                    }
                    Err(why) => notes.push(format!(
                        "⚠ {} in a container: {why} (the checks report it not checked)",
                        e.name
                    )),
                }
            }
        }
    }
    if !env.is_empty() {
        notes.push("  (kept for the next checks; `just workshop-down` removes them)".to_owned());
    }
    (env, notes)
}

/// Starts (or finds running) the workshop's container of `e`, and waits until its server answers.
fn container(root: &Path, engine: &str, e: &Engine) -> Result<String, String> {
    let state = quiet(
        engine,
        &[
            "container",
            "inspect",
            "--format",
            "{{.State.Running}}",
            e.container,
        ],
    );
    let began = Instant::now();
    let what = match state.as_deref() {
        Ok("true") => "running since an earlier check",
        Ok(_) => {
            quiet(engine, &["start", e.container])?;
            "started again"
        }
        Err(_) => {
            if quiet(engine, &["image", "inspect", e.image]).is_err() {
                // Pulled where a registry answers, else built from Debian's packages.
                let images = root.join(".ci/images");
                let status = Command::new(&images)
                    .arg(e.recipe)
                    .env("TANDEM_CONTAINER_ENGINE", engine)
                    .status()
                    .map_err(|err| format!("{}: {err}", images.display()))?;
                if !status.success() {
                    return Err(format!("{} {} failed", images.display(), e.recipe));
                }
            }
            if answers(e.container_port) {
                return Err(format!(
                    "127.0.0.1:{} is taken by something else",
                    e.container_port
                ));
            }
            let publish = format!("127.0.0.1:{}:{}", e.container_port, e.inner_port);
            let mut args = vec![
                "run",
                "-d",
                "--name",
                e.container,
                "--label",
                "org.tandem.workshop=1",
                "-p",
                &publish,
            ];
            for v in e.env {
                args.extend(["-e", v]);
            }
            args.push(e.image);
            args.extend(e.args);
            quiet(engine, &args)?;
            "started"
        }
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut exec = vec!["exec", e.container];
        exec.extend(e.ready);
        if quiet(engine, &exec).is_ok() && answers(e.container_port) {
            break;
        }
        if Instant::now() > deadline {
            let log = quiet(engine, &["logs", "--tail", "20", e.container]).unwrap_or_default();
            return Err(format!(
                "{} did not answer within 120 s; its log ends:\n{log}",
                e.container
            ));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Ok(format!(
        "{} in a container ({engine}): {} on 127.0.0.1:{}, {what}{}",
        e.name,
        e.container,
        e.container_port,
        if what == "running since an earlier check" {
            String::new()
        } else {
            format!(" ({:.0} s)", began.elapsed().as_secs_f64())
        }
    ))
}

/// Removes the workshop's containers (`just workshop-down`).
pub fn down() -> Result<bool, String> {
    let engine = engine()?;
    for e in &ENGINES {
        match quiet(&engine, &["rm", "-f", e.container]) {
            Ok(_) => println!("removed {} ({})", e.container, e.name),
            Err(why) => println!("{}: {why}", e.container),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never() -> bool {
        panic!("this probe must not be asked")
    }

    fn no_engine() -> Result<String, String> {
        Err("none here".into())
    }

    const PG: &Engine = &ENGINES[0];

    /// A variable the learner set, or TANDEM_CONTAINERS=0, leaves the server as it is, asking nothing.
    #[test]
    fn the_learners_choice_wins() {
        assert_eq!(plan(PG, true, None, never, || panic!()), Plan::AsIs);
        assert_eq!(plan(PG, true, Some("1"), never, || panic!()), Plan::AsIs);
        assert_eq!(plan(PG, false, Some("0"), never, || panic!()), Plan::AsIs);
    }

    /// A local server that answers is used; one that does not is replaced by a container when an engine
    /// answers, else left for the checks to report.
    #[test]
    fn containers_only_where_the_local_server_is_missing() {
        assert_eq!(plan(PG, false, None, || true, || panic!()), Plan::AsIs);
        assert_eq!(
            plan(PG, false, None, || false, || Ok("podman".into())),
            Plan::Container
        );
        assert_eq!(plan(PG, false, None, || false, no_engine), Plan::AsIs);
    }

    /// TANDEM_CONTAINERS=1 asks for the container even when the local server answers, and says why when
    /// no engine can start it.
    #[test]
    fn containers_on_request() {
        assert_eq!(
            plan(PG, false, Some("1"), never, || Ok("docker".into())),
            Plan::Container
        );
        let Plan::Missing(why) = plan(PG, false, Some("1"), never, no_engine) else {
            panic!("a missing engine must be said")
        };
        assert!(
            why.contains("PostgreSQL") && why.contains("none here"),
            "{why}"
        );
    }

    /// The containers' URLs are the ports they publish, on loopback.
    #[test]
    fn container_urls() {
        assert_eq!(
            (ENGINES[0].url)(ENGINES[0].container_port),
            "postgres://postgres@127.0.0.1:55432/test"
        );
        assert_eq!(
            (ENGINES[1].url)(ENGINES[1].container_port),
            "mysql://root@127.0.0.1:53306/test"
        );
    }
}
