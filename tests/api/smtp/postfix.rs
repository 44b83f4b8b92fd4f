//! A real Postfix (Debian's package `postfix`, which `scripts/services` installs) for tests: an
//! instance of its own in a temporary directory (`postfix -c DIR`), listening on a free loopback
//! port, never the machine's mail system. Its relay restrictions are Postfix's stock ones
//! (`permit_mynetworks, permit_sasl_authenticated, defer_unauth_destination`), with no trusted
//! network the tests connect from: a recipient at a domain it does not relay gets
//! `454 4.7.1 Relay access denied` at RCPT TO, as from any outside client. Mail for the domain
//! it relays goes on to a test [`SmtpServer`](super::SmtpServer), which records it.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Postfix {
    pub port: u16,
    dir: tempfile::TempDir,
}

/// The master.cf of the instance: the SMTP server on `127.0.0.1:{port}`, and the internal services
/// (Debian's list, none chrooted, since the instance has no chroot of its own).
fn master_cf(port: u16) -> String {
    let services = [
        "pickup    unix  n       -       n       60      1       pickup",
        "cleanup   unix  n       -       n       -       0       cleanup",
        "qmgr      unix  n       -       n       300     1       qmgr",
        "tlsmgr    unix  -       -       n       1000?   1       tlsmgr",
        "rewrite   unix  -       -       n       -       -       trivial-rewrite",
        "bounce    unix  -       -       n       -       0       bounce",
        "defer     unix  -       -       n       -       0       bounce",
        "trace     unix  -       -       n       -       0       bounce",
        "verify    unix  -       -       n       -       1       verify",
        "flush     unix  n       -       n       1000?   0       flush",
        "proxymap  unix  -       -       n       -       -       proxymap",
        "proxywrite unix -       -       n       -       1       proxymap",
        "smtp      unix  -       -       n       -       -       smtp",
        "relay     unix  -       -       n       -       -       smtp",
        "showq     unix  n       -       n       -       -       showq",
        "error     unix  -       -       n       -       -       error",
        "retry     unix  -       -       n       -       -       error",
        "discard   unix  -       -       n       -       -       discard",
        "anvil     unix  -       -       n       -       1       anvil",
        "scache    unix  -       -       n       -       1       scache",
        "postlog   unix-dgram n  -       n       -       1       postlogd",
    ];
    format!(
        "127.0.0.1:{port} inet n - n - - smtpd\n{}\n",
        services.join("\n")
    )
}

impl Postfix {
    /// Starts an instance that relays mail for `relayed` (a domain) to `127.0.0.1:{next_hop}`
    /// and refuses to relay for any other domain. Panics, naming what is missing, when Postfix
    /// is not installed or does not start: the test fails, it never skips.
    pub fn start(relayed: &str, next_hop: u16) -> Postfix {
        let postfix = Path::new("/usr/sbin/postfix");
        assert!(
            postfix.exists(),
            "Postfix is not installed (/usr/sbin/postfix): run scripts/services, which installs \
             the Debian package postfix"
        );
        let dir = tempfile::tempdir().expect("a directory for Postfix");
        let root = dir.path().to_path_buf();
        // Postfix's own user must reach its queue and data directories.
        set_mode(&root, 0o755);
        std::fs::create_dir(root.join("queue")).unwrap();
        std::fs::create_dir(root.join("data")).unwrap();
        let chown = Command::new("chown")
            .args(["postfix"])
            .arg(root.join("data"))
            .status()
            .expect("chown");
        assert!(chown.success(), "chown postfix {}/data", root.display());
        let port = free_port();
        let d = root.display();
        let main_cf = format!(
            "compatibility_level = 3.6\n\
             queue_directory = {d}/queue\n\
             data_directory = {d}/data\n\
             mail_owner = postfix\n\
             setgid_group = postdrop\n\
             myhostname = postfix.jobboard.test\n\
             mydomain = jobboard.test\n\
             mydestination =\n\
             inet_interfaces = 127.0.0.1\n\
             inet_protocols = ipv4\n\
             # no trusted network: the tests' client is an outside client\n\
             mynetworks = 192.0.2.0/24\n\
             relay_domains = {relayed}\n\
             relay_transport = relay:[127.0.0.1]:{next_hop}\n\
             maillog_file = {d}/maillog\n\
             maillog_file_prefixes = {d}\n"
        );
        std::fs::write(root.join("main.cf"), main_cf).unwrap();
        std::fs::write(root.join("master.cf"), master_cf(port)).unwrap();
        let out = Command::new(postfix)
            .arg("-c")
            .arg(&root)
            .arg("start")
            .output()
            .expect("run postfix start");
        let p = Postfix { port, dir };
        assert!(
            out.status.success(),
            "postfix -c {d} start failed: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            p.log()
        );
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return p;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("Postfix never listened on 127.0.0.1:{port}:\n{}", p.log());
    }

    /// Its log (`maillog_file`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path("maillog")).unwrap_or_default()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

impl Drop for Postfix {
    fn drop(&mut self) {
        let stopped = Command::new("/usr/sbin/postfix")
            .arg("-c")
            .arg(self.dir.path())
            .arg("stop")
            .output();
        if !stopped.is_ok_and(|o| o.status.success()) {
            eprintln!("postfix -c {} stop failed", self.dir.path().display());
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
