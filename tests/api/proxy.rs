//! A TCP proxy the test controls: it forwards to a real server until it is cut, then drops every
//! connection and refuses new ones until it is restored. It makes a dependency unreachable
//! without stopping the shared server.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct TcpProxy {
    pub port: u16,
    up: Arc<AtomicBool>,
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
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if !is_up.load(Ordering::SeqCst) {
                    drop(client);
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
        TcpProxy { port, up, cut_tx }
    }

    /// Drops every connection and refuses new ones.
    pub fn cut(&self) {
        self.up.store(false, Ordering::SeqCst);
        self.cut_tx.send_modify(|n| *n += 1);
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::SeqCst);
    }
}
