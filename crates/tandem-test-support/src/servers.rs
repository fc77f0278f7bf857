//! Where the tests' PostgreSQL and MariaDB are. In order:
//!
//! 1. `TANDEM_POSTGRES_URL` / `TANDEM_MYSQL_URL`, when set: always that server.
//! 2. `TANDEM_CONTAINERS=1`: containers started for this run (feature `testcontainers`), even when local
//!    servers answer; `TANDEM_CONTAINERS=0`: never containers.
//! 3. Otherwise the local server at the default URL when it answers, else containers when a container
//!    engine answers ([`engine`]; feature `testcontainers`), else the default URL anyway — the harness then
//!    reports the server unreachable (ignored, or a failure under `CI=true`).
//!
//! Tests that stop, restart or freeze a server never use these: they start one of their own
//! (`containers::Server`).
//!
//! The choice is made once per engine and per process; [`choose`] is the rule, without I/O.

use std::sync::OnceLock;
use std::time::Duration;

use tandem_sql::Dialect;

/// Default PostgreSQL URL (DESIGN.md).
pub const POSTGRES_DEFAULT: &str = "postgres://postgres@127.0.0.1:5432/test";
/// Default MariaDB URL (DESIGN.md).
pub const MYSQL_DEFAULT: &str = "mysql://root@127.0.0.1:3306/test";

/// Where one engine's server comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The URL of the environment variable.
    Env(String),
    /// The local server at the default URL (reachable or not).
    Local,
    /// A container started for this run.
    Container,
}

/// What [`choose`] is told about the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Machine {
    /// Whether this build can start containers (the `testcontainers` feature).
    pub can_start_containers: bool,
}

/// The rule of the module docs. `env_url` is the engine's URL variable, `containers` `TANDEM_CONTAINERS`;
/// the probes are called only when the rule needs their answer. An unusable `TANDEM_CONTAINERS` (a value
/// other than 0 and 1, or 1 in a build without the feature) is an error that says what to do.
pub fn choose(
    env_url: Option<String>,
    containers: Option<&str>,
    machine: Machine,
    local_answers: impl FnOnce() -> bool,
    engine_answers: impl FnOnce() -> bool,
) -> Result<Source, String> {
    if let Some(url) = env_url.filter(|u| !u.is_empty()) {
        return Ok(Source::Env(url));
    }
    match containers {
        Some("1") if machine.can_start_containers => return Ok(Source::Container),
        Some("1") => {
            return Err("TANDEM_CONTAINERS=1 needs the containers built in: \
                        cargo test --features tandem-test-support/testcontainers"
                .into());
        }
        Some("0") => return Ok(Source::Local),
        Some(other) if !other.is_empty() => {
            return Err(format!(
                "TANDEM_CONTAINERS={other}: use 1 (start containers) or 0 (never)"
            ));
        }
        _ => {}
    }
    if local_answers() {
        return Ok(Source::Local);
    }
    if machine.can_start_containers && engine_answers() {
        return Ok(Source::Container);
    }
    Ok(Source::Local)
}

/// The URL of a server engine and the variable that sets it, chosen once per process (see the module
/// docs). Panics with the reason when `TANDEM_CONTAINERS` cannot be honoured or a container cannot start:
/// the harness asks [`server`] first and reports that reason, so only a case that did not declare its
/// server gets here without one.
pub fn server_url(dialect: Dialect) -> (String, &'static str) {
    server(dialect).unwrap_or_else(|e| panic!("{e}"))
}

/// [`server_url`], or why there is none: `TANDEM_CONTAINERS` cannot be honoured, or the container did not
/// start (with its log). Chosen, and a container started, once per engine and process.
pub fn server(dialect: Dialect) -> Result<(String, &'static str), String> {
    static POSTGRES: OnceLock<Result<String, String>> = OnceLock::new();
    static MYSQL: OnceLock<Result<String, String>> = OnceLock::new();
    let (cell, var, default) = match dialect {
        Dialect::Postgres => (&POSTGRES, "TANDEM_POSTGRES_URL", POSTGRES_DEFAULT),
        Dialect::MySql => (&MYSQL, "TANDEM_MYSQL_URL", MYSQL_DEFAULT),
        Dialect::Sqlite => return Ok((String::new(), "")),
    };
    let url = cell.get_or_init(|| {
        let source = choose(
            std::env::var(var).ok(),
            std::env::var("TANDEM_CONTAINERS").ok().as_deref(),
            Machine {
                can_start_containers: cfg!(feature = "testcontainers"),
            },
            || answers(default),
            || engine().is_ok(),
        )?;
        match source {
            Source::Env(url) => Ok(url),
            Source::Local => Ok(default.to_owned()),
            #[cfg(feature = "testcontainers")]
            Source::Container => {
                engine()?;
                crate::containers::shared_url(dialect)
            }
            #[cfg(not(feature = "testcontainers"))]
            Source::Container => unreachable!("containers are chosen only when built in"),
        }
    });
    url.clone().map(|url| (url, var))
}

/// Whether something accepts TCP connections at the URL's host and port within a second.
fn answers(url: &str) -> bool {
    let Ok(options) = tandem_core::ConnectOptions::parse(url) else {
        return false;
    };
    use std::net::ToSocketAddrs;
    let Ok(addrs) = (options.host.as_str(), options.port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_secs(1)).is_ok())
}

/// The Docker API testcontainers will use (`DOCKER_HOST`, else `/var/run/docker.sock`) when it answers;
/// else what to do, naming podman's own socket when that is what the machine has (testcontainers does not
/// look for it: `DOCKER_HOST` must name it).
pub fn engine() -> Result<String, String> {
    let host = std::env::var("DOCKER_HOST").unwrap_or_default();
    if let Some(addr) = host.strip_prefix("tcp://") {
        use std::net::ToSocketAddrs;
        let answers = addr.to_socket_addrs().is_ok_and(|mut a| {
            a.any(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_secs(1)).is_ok())
        });
        return if answers {
            Ok(host)
        } else {
            Err(format!("no container engine answers at DOCKER_HOST={host}"))
        };
    }
    if let Some(path) = host.strip_prefix("unix://") {
        return if std::os::unix::net::UnixStream::connect(path).is_ok() {
            Ok(host)
        } else {
            Err(format!("no container engine answers at DOCKER_HOST={host}"))
        };
    }
    if !host.is_empty() {
        return Err(format!(
            "DOCKER_HOST={host}: use unix:///path/to/socket or tcp://host:port"
        ));
    }
    const DOCKER: &str = "/var/run/docker.sock";
    if std::os::unix::net::UnixStream::connect(DOCKER).is_ok() {
        return Ok(format!("unix://{DOCKER}"));
    }
    let runtime_dir = std::env::var("XDG_RUNTIME_DIR").unwrap_or_default();
    let podman_sockets = ["/run/podman/podman.sock".to_owned()]
        .into_iter()
        .chain((!runtime_dir.is_empty()).then(|| format!("{runtime_dir}/podman/podman.sock")));
    for socket in podman_sockets {
        if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
            return Err(format!(
                "podman's API answers at {socket}, but testcontainers reads DOCKER_HOST: \
                 export DOCKER_HOST=unix://{socket}"
            ));
        }
    }
    let podman = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("podman").is_file()));
    Err(if podman {
        "podman serves no API socket: start one with `podman system service --time=0 \
         unix:///run/podman/podman.sock &` and export DOCKER_HOST=unix:///run/podman/podman.sock"
            .to_owned()
    } else {
        format!("no container engine: DOCKER_HOST is unset and nothing answers at {DOCKER}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const WITH: Machine = Machine {
        can_start_containers: true,
    };
    const WITHOUT: Machine = Machine {
        can_start_containers: false,
    };

    fn never() -> bool {
        panic!("this probe must not be asked")
    }

    /// An explicit URL wins over everything, without probing anything.
    #[test]
    fn explicit_url_wins() {
        for containers in [None, Some("1"), Some("0"), Some("junk")] {
            assert_eq!(
                choose(
                    Some("postgres://db/x".into()),
                    containers,
                    WITH,
                    never,
                    never
                ),
                Ok(Source::Env("postgres://db/x".into()))
            );
        }
        // An empty variable is not a URL.
        assert_eq!(
            choose(Some(String::new()), None, WITH, || true, never),
            Ok(Source::Local)
        );
    }

    /// TANDEM_CONTAINERS=1 starts containers even when a local server answers; without the feature it is
    /// an error naming the feature; 0 never starts them; other values are errors.
    #[test]
    fn containers_variable() {
        assert_eq!(
            choose(None, Some("1"), WITH, never, never),
            Ok(Source::Container)
        );
        let e = choose(None, Some("1"), WITHOUT, never, never).unwrap_err();
        assert!(
            e.contains("--features tandem-test-support/testcontainers"),
            "{e}"
        );
        assert_eq!(
            choose(None, Some("0"), WITH, never, never),
            Ok(Source::Local)
        );
        let e = choose(None, Some("yes"), WITH, never, never).unwrap_err();
        assert!(e.contains("TANDEM_CONTAINERS=yes"), "{e}");
    }

    /// Unset: the local server when it answers; containers only when it does not and a Docker engine
    /// does (and the build can start them); otherwise the local URL, which the harness reports.
    #[test]
    fn fallback_order() {
        assert_eq!(choose(None, None, WITH, || true, never), Ok(Source::Local));
        assert_eq!(
            choose(None, Some(""), WITH, || false, || true),
            Ok(Source::Container)
        );
        assert_eq!(
            choose(None, None, WITH, || false, || false),
            Ok(Source::Local)
        );
        assert_eq!(
            choose(None, None, WITHOUT, || false, never),
            Ok(Source::Local)
        );
    }

    /// The probe sees a listening port and a closed one.
    #[test]
    fn local_probe() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(answers(&format!("postgres://u@127.0.0.1:{port}/db")));
        drop(listener);
        assert!(!answers(&format!("postgres://u@127.0.0.1:{port}/db")));
        assert!(!answers("not a url"));
    }
}
