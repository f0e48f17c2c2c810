//! The remote tier over TLS (`rediss://`) against a real redis-server with certificates the
//! test generates: the private CA works, and a wrong CA, the system roots, a host name missing
//! from the certificate or a CA file that is not one are each refused with one warning and a
//! local compile that exits 0.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;

use crate::redis_servers::{Server, Tls, fresh_db};
use crate::remote::{SECRET_TEXT, compile_file, kache, kernel_file, local_stats, said, warnings};

/// One TLS server (and its certificates, naming only 127.0.0.1) for this binary.
fn tls_server() -> Option<&'static (Tls, Server)> {
    static SHARED: Mutex<Option<&'static (Tls, Server)>> = Mutex::new(None);
    let mut s = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if s.is_none() {
        let tls = Tls::generate(&["127.0.0.1"]);
        let server = Server::start_tls(&tls)?;
        *s = Some(Box::leak(Box::new((tls, server))));
    }
    *s
}

#[test]
fn rediss_with_a_private_ca_shares_entries() {
    let Some((tls, r)) = tls_server() else { return };
    let db = fresh_db();
    let url = format!("rediss://127.0.0.1:{}/{db}", r.tls_port.unwrap());
    let ca = tls.ca.to_str().unwrap();
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_CA", ca)];
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "tls", 3);
    let o = compile_file(&work.path().join("a"), &file, &env);
    assert!(o.status.success() && warnings(&o).is_empty(), "{}", said(&o));
    assert_eq!(r.dump(db).len(), 3, "stored over TLS");
    let o = compile_file(&work.path().join("b"), &file, &env);
    assert!(o.status.success() && warnings(&o).is_empty(), "{}", said(&o));
    assert_eq!(local_stats(&work.path().join("b"))["hits_remote"], 3);
    let o = kache(work.path(), &env).args(["remote", "ping"]).output().unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains(" ms"), "{}", said(&o));
    let o = kache(work.path(), &env).args(["remote", "stats"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("entries: 3\n"), "{}", said(&o));
}

#[test]
fn refused_tls_is_one_warning_and_a_local_compile() {
    let Some((tls, r)) = tls_server() else { return };
    let db = fresh_db();
    let port = r.tls_port.unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "refused", 3);
    let garbage = work.path().join("garbage.pem");
    std::fs::write(&garbage, "not a certificate").unwrap();
    let right = format!("rediss://127.0.0.1:{port}/{db}");
    let cases: Vec<(&str, String, Option<&std::path::Path>, &str)> = vec![
        ("a wrong CA", right.clone(), Some(tls.wrong_ca.as_path()), "certificate"),
        ("the system roots", right.clone(), None, "certificate"),
        // The certificate names 127.0.0.1 only.
        ("a host name missing from the certificate", format!("rediss://localhost:{port}/{db}"), Some(tls.ca.as_path()), "certificate"),
        ("a CA file that holds none", right.clone(), Some(garbage.as_path()), "no PEM certificate"),
        ("TLS to a plain port", format!("rediss://127.0.0.1:{}/{db}", r.port), Some(tls.ca.as_path()), ""),
        ("plain text to the TLS port", format!("redis://127.0.0.1:{port}/{db}"), None, ""),
    ];
    for (i, (what, url, ca, why)) in cases.into_iter().enumerate() {
        let mut env = vec![("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_TIMEOUT_MS", "1000")];
        if let Some(ca) = ca {
            env.push(("KACHE_REMOTE_CA", ca.to_str().unwrap()));
        }
        let cache = work.path().join(format!("c{i}"));
        let o = compile_file(&cache, &file, &env);
        assert!(o.status.success(), "{what}: {}", said(&o));
        assert_eq!(warnings(&o).len(), 1, "{what}: {}", said(&o));
        assert!(warnings(&o)[0].contains(why), "{what}: {}", said(&o));
        assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"), "{what}: {}", said(&o));
        assert_eq!(std::fs::read_dir(cache.join("out")).unwrap().count(), 3, "{what}");
        assert_eq!(local_stats(&cache)["remote_errors"], 1, "{what}");
        let o = kache(&cache, &env).args(["remote", "ping"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{what}: {}", said(&o));
    }
    assert!(r.dump(db).is_empty(), "an entry went through a refused connection");
}
