//! A TCP proxy the test controls: it forwards to a real server until it is cut, then drops every
//! connection and refuses new ones until it is restored; or, stalled, it drops every connection
//! and holds new ones open without a byte of answer (a hung server). It makes a dependency
//! unreachable without stopping the shared server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct TcpProxy {
    pub port: u16,
    up: Arc<AtomicBool>,
    stalled: Arc<AtomicBool>,
    cut_tx: watch::Sender<u64>,
}

impl TcpProxy {
    pub async fn start(target: &str) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let (cut_tx, cut_rx) = watch::channel(0u64);
        let target = target.to_string();
        let is_up = up.clone();
        let stalled = Arc::new(AtomicBool::new(false));
        let is_stalled = stalled.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if !is_up.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                if is_stalled.load(Ordering::SeqCst) {
                    // Read what comes, answer nothing, until the stall ends.
                    let held = is_stalled.clone();
                    tokio::spawn(async move {
                        let mut client = client;
                        let mut sink = [0u8; 4096];
                        while held.load(Ordering::SeqCst) {
                            let read = tokio::io::AsyncReadExt::read(&mut client, &mut sink);
                            match tokio::time::timeout(std::time::Duration::from_millis(50), read)
                                .await
                            {
                                Ok(Ok(0)) | Ok(Err(_)) => return,
                                _ => {}
                            }
                        }
                    });
                    continue;
                }
                let target = target.clone();
                let mut cut = cut_rx.clone();
                // Only a cut after this connection opened ends it.
                cut.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    let (mut c, mut s) = (client, server);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut c, &mut s) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        TcpProxy {
            port,
            up,
            stalled,
            cut_tx,
        }
    }

    /// Drops every connection and refuses new ones.
    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.cut_tx.send_modify(|n| *n += 1);
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
        self.stalled.store(false, Ordering::SeqCst);
    }

    /// Drops every connection; new ones are accepted and never answered.
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
        self.cut_tx.send_modify(|n| *n += 1);
    }
}
