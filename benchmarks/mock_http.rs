//! Reading one HTTP/1.1 request in the scripted loopback mocks of the benchmarks
//! (`client_cost_tools`, `client_fidelity`) and the client's connect test
//! (`crates/client/tests/connect.rs`), each including this file with `#[path]`.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads one request from `sock` into `buf` (bytes already there, read past the last
/// request, count): its head, then a `Content-Length` body. Returns the head as text and
/// the request's length in `buf` (head and body), which the caller drains; `None` when the
/// peer closed or the read failed. `tmp` is the read buffer.
pub async fn read_request(
    sock: &mut TcpStream,
    buf: &mut Vec<u8>,
    tmp: &mut [u8],
) -> Option<(String, usize)> {
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        fill(sock, buf, tmp).await?;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        fill(sock, buf, tmp).await?;
    }
    Some((head, head_end + len))
}

/// One read appended to `buf`; `None` at EOF or on an error.
async fn fill(sock: &mut TcpStream, buf: &mut Vec<u8>, tmp: &mut [u8]) -> Option<()> {
    match sock.read(tmp).await {
        Ok(0) | Err(_) => None,
        Ok(n) => {
            buf.extend_from_slice(&tmp[..n]);
            Some(())
        }
    }
}
