//! The `tokio` contender: a current_thread runtime (one thread, epoll through mio) and one task
//! per connection doing `read` then `write_all`, as tokio's own echo example does.

use super::{classify_accept_error, or_tick, AcceptError, BUF_BYTES, STOP_POLL};
use ::tokio::io::{AsyncReadExt, AsyncWriteExt};
use ::tokio::net::{TcpListener, TcpStream};
use anyhow::Context;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub(super) fn serve(listener: std::net::TcpListener, stop: Arc<AtomicBool>) -> anyhow::Result<()> {
    listener
        .set_nonblocking(true)
        .context("tokio: setting the listener non-blocking")?;
    let rt = ::tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .context("tokio: building the current_thread runtime")?;
    // Dropping `rt` after block_on cancels every connection task and closes its socket.
    rt.block_on(async move {
        let listener =
            TcpListener::from_std(listener).context("tokio: registering the listener")?;
        let mut accept = pin!(listener.accept());
        while !stop.load(Ordering::Relaxed) {
            let Some(accepted) = or_tick(&mut accept, ::tokio::time::sleep(STOP_POLL)).await else {
                continue;
            };
            accept.set(listener.accept());
            match accepted {
                Ok((stream, _)) => {
                    ::tokio::spawn(echo(stream));
                }
                Err(e) => match classify_accept_error(&e) {
                    AcceptError::Retry => {}
                    AcceptError::BackOff => ::tokio::time::sleep(STOP_POLL).await,
                    AcceptError::Fatal => return Err(e).context("tokio: accept"),
                },
            }
        }
        Ok(())
    })
}

/// One connection: read what has arrived, write all of it back, until EOF or an error.
async fn echo(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    // Read into the spare capacity (read_buf): like monoio's owned buffer, nothing is zeroed,
    // so a connection touches only the memory its messages fill.
    let mut buf: Vec<u8> = Vec::with_capacity(BUF_BYTES);
    loop {
        buf.clear();
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if stream.write_all(&buf).await.is_err() {
            return;
        }
    }
}
