//! Connections as a phase of their own, against a loopback server.
//!
//! - A dropped SYN: the server's listen backlog is tiny and full when the request
//!   connects, so Linux drops the SYN and the client retransmits it after 1 s. The request
//!   must record that second as `connect_ns` with `connect_retransmit`, its TTFT (which
//!   counts from the send) must hold it, and what is left of the TTFT is the server's.
//! - A warm pool: `Client::warm_pool(n)` opens `n` connections before the window, so `n`
//!   concurrent requests after it open none and record no connect time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use inferscope_client::{ChatRequest, Client, ClientConfig, RecordWarning};
use inferscope_clock::RunClock;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpSocket, TcpStream};

#[path = "../../../benchmarks/mock_http.rs"]
mod mock_http;

const SSE: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":null}]}\n\n\
                   data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                   data: [DONE]\n\n";

/// Serves one keep-alive connection: `GET …/models` gets a small JSON list, anything else
/// a short SSE stream (one token), each with a content length; `requests` counts them.
async fn serve_conn(mut sock: TcpStream, requests: Arc<AtomicUsize>) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        let Some((head, len)) = mock_http::read_request(&mut sock, &mut buf, &mut tmp).await else {
            return;
        };
        let head = head.to_ascii_lowercase();
        buf.drain(..len);
        requests.fetch_add(1, Ordering::SeqCst);
        let (ct, body) = if head.starts_with("get ") {
            (
                "application/json",
                r#"{"object":"list","data":[{"id":"m"}]}"#,
            )
        } else {
            ("text/event-stream", SSE)
        };
        let resp = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {ct}\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if sock.write_all(resp.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn request(id: &str) -> ChatRequest {
    ChatRequest {
        request_id: id.into(),
        model: "m".into(),
        messages: vec![serde_json::json!({"role": "user", "content": "hi"})],
        stream: true,
        ..ChatRequest::default()
    }
}

/// A client of `addr`, on reqwest's transport when `reqwest` (`https` endpoints use it),
/// else on the client's own HTTP/1.1 pool (plain `http`).
fn client(addr: std::net::SocketAddr, reqwest: bool) -> Client {
    let mut cfg = ClientConfig::new(format!("http://{addr}/v1"));
    cfg.request_timeout = Duration::from_secs(20);
    cfg.reqwest_for_http = reqwest;
    Client::new(cfg).expect("client")
}

/// `count` once it has reached `n` (or after 5 s): a connect completes before the
/// server's accept loop has taken it, so an accept count lags the connections opened.
async fn reached(count: &AtomicUsize, n: usize) -> usize {
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while count.load(Ordering::SeqCst) < n && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    count.load(Ordering::SeqCst)
}

/// Whether a plain connect to `addr` completes within 150 ms (a full accept queue drops
/// its SYN, and the next try comes only after 1 s).
async fn connects_quickly(addr: std::net::SocketAddr) -> Option<TcpStream> {
    tokio::time::timeout(Duration::from_millis(150), TcpStream::connect(addr))
        .await
        .ok()?
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_syn_is_recorded_as_connect_time_inside_the_ttft() {
    a_dropped_syn_is_recorded_as_connect_time_inside_the_ttft_on(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_syn_is_recorded_as_connect_time_inside_the_ttft_over_reqwest() {
    a_dropped_syn_is_recorded_as_connect_time_inside_the_ttft_on(true).await;
}

/// A listener with a backlog of 1 whose accept queue is full (nothing accepts yet): from
/// then on every SYN is dropped until the queue has room. Returns the listener and the
/// connections that filled it.
async fn full_accept_queue() -> (TcpListener, Vec<TcpStream>) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener: TcpListener = socket.listen(1).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    let mut stalled = false;
    for _ in 0..16 {
        match connects_quickly(addr).await {
            Some(s) => fillers.push(s),
            None => {
                stalled = true;
                break;
            }
        }
    }
    assert!(
        stalled,
        "the accept queue never filled (backlog 1, {} connects)",
        fillers.len()
    );
    (listener, fillers)
}

/// The server wakes up 300 ms from now: it drains the queue (the fillers, a stalled
/// probe's retransmit if it comes first) and serves whatever connects.
async fn wake_up_later(listener: TcpListener, fillers: Vec<TcpStream>) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(fillers);
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(serve_conn(sock, Arc::default()));
        }
    });
}

async fn a_dropped_syn_is_recorded_as_connect_time_inside_the_ttft_on(reqwest: bool) {
    let (listener, fillers) = full_accept_queue().await;
    let addr = listener.local_addr().unwrap();
    let clock = RunClock::start();
    let c = client(addr, reqwest);
    let req = request("r1");
    let sent = tokio::spawn({
        let c = c.clone();
        let clock = clock.clone();
        async move { c.chat(&req, &clock, clock.elapsed_ns()).await }
    });
    wake_up_later(listener, fillers).await;
    let rec = sent.await.unwrap();
    assert!(rec.is_success(), "{rec:?}");
    let connect = rec.connect_ns.expect("the request opened its connection");
    assert!(
        connect >= 900_000_000,
        "the SYN retransmit (1 s) is the connect's: {connect} ns"
    );
    assert!(
        rec.warnings.contains(&RecordWarning::ConnectRetransmit),
        "{:?}",
        rec.warnings
    );
    let ttft = rec.ttft_ns.unwrap() - rec.send_ns;
    assert!(
        ttft >= connect,
        "TTFT {ttft} ns holds the connect {connect} ns"
    );
    assert!(
        ttft - connect < 500_000_000,
        "what is left of the TTFT is the server's: {} ns",
        ttft - connect
    );
    assert_eq!(c.connect_counts().retransmits, 1);

    // The next request goes out on the kept-alive connection: no connect time.
    let again = c.chat(&request("r2"), &clock, clock.elapsed_ns()).await;
    assert!(again.is_success(), "{again:?}");
    assert_eq!(again.connect_ns, None);
    assert!(!again.warnings.contains(&RecordWarning::ConnectRetransmit));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_pool_opens_every_connection_before_the_window() {
    a_warm_pool_opens_every_connection_before_the_window_on(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_pool_opens_every_connection_before_the_window_over_reqwest() {
    a_warm_pool_opens_every_connection_before_the_window_on(true).await;
}

async fn a_warm_pool_opens_every_connection_before_the_window_on(reqwest: bool) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    tokio::spawn({
        let (accepted, requests) = (Arc::clone(&accepted), Arc::clone(&requests));
        async move {
            while let Ok((sock, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(serve_conn(sock, Arc::clone(&requests)));
            }
        }
    });
    let clock = RunClock::start();
    let c = client(addr, reqwest);
    let warm = c.warm_pool(6).await;
    assert_eq!(
        (warm.wanted, warm.opened, warm.failed),
        (6, 6, 0),
        "{warm:?}"
    );
    assert_eq!(reached(&accepted, 6).await, 6);
    // A plain-http pool is connections, not requests: the server saw none; reqwest's
    // pool fills only through requests (a wave of 6 `GET /models`, and another when a
    // connection came back to its pool while the wave was still checking out).
    let warm_requests = requests.load(Ordering::SeqCst);
    if reqwest {
        assert!(
            warm_requests >= 6 && warm_requests.is_multiple_of(6),
            "{warm_requests}"
        );
    } else {
        assert_eq!(warm_requests, 0);
    }
    let recs = futures_util::future::join_all((0..6).map(|i| {
        let c = &c;
        let clock = &clock;
        async move {
            c.chat(&request(&format!("w{i}")), clock, clock.elapsed_ns())
                .await
        }
    }))
    .await;
    for r in &recs {
        assert!(r.is_success(), "{r:?}");
    }
    let in_window = accepted.load(Ordering::SeqCst) - 6;
    if reqwest {
        // reqwest's checkout races a connect against a connection coming back to its pool
        // (5 ms after the warm-up's bodies were read, it may still be on its way): now and
        // then a connect finishes in the background, for no request (1 run in about 7).
        assert!(in_window <= 1, "{in_window} connects in the window");
        assert!(recs.iter().filter(|r| r.connect_ns.is_some()).count() <= in_window);
    } else {
        assert_eq!(in_window, 0, "no connect in the window");
        for r in &recs {
            assert_eq!(r.connect_ns, None, "{}", r.request_id);
        }
    }
    assert_eq!(requests.load(Ordering::SeqCst), warm_requests + 6);
    // A second warm pool of the same size finds them idle and opens none (reqwest's: at
    // most the one a request's connection may still be on its way back to its pool).
    let again = c.warm_pool(6).await;
    assert_eq!(again.failed, 0, "{again:?}");
    assert!(again.opened <= u64::from(reqwest), "{again:?}");

    // Without a warm pool the first requests open their connections in the window, and
    // say so.
    let cold = client(addr, reqwest);
    let r = cold
        .chat(&request("cold"), &clock, clock.elapsed_ns())
        .await;
    assert!(r.is_success(), "{r:?}");
    assert!(r.connect_ns.is_some_and(|n| n > 0), "{:?}", r.connect_ns);
}

/// A warm-up whose SYNs the server's full listen backlog dropped says so: those connects
/// took the 1 s retransmit, counted apart from the window's (plain http: the client's own
/// pool opens the connections).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_pool_counts_its_own_dropped_syns() {
    let (listener, fillers) = full_accept_queue().await;
    let c = client(listener.local_addr().unwrap(), false);
    let warm = tokio::spawn({
        let c = c.clone();
        async move { c.warm_pool(2).await }
    });
    wake_up_later(listener, fillers).await;
    let warm = warm.await.unwrap();
    assert_eq!((warm.opened, warm.failed), (2, 0), "{warm:?}");
    assert!(
        (1..=2).contains(&warm.retransmits),
        "the warm-up's connects waited out the retransmit: {warm:?}"
    );
    assert!(warm.elapsed_ns >= 900_000_000, "{warm:?}");
    // The window starts clean: its counts do not carry the warm-up's.
    let before = c.connect_counts();
    let clock = RunClock::start();
    let r = c.chat(&request("after"), &clock, clock.elapsed_ns()).await;
    assert!(r.is_success(), "{r:?}");
    assert_eq!(r.connect_ns, None, "{r:?}");
    assert_eq!(c.connect_counts().since(before).retransmits, 0);
}

/// A warm pool counts only live connections: after the server closed the idle ones, a
/// second warm pool opens them again (plain http: the client's own pool).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_pool_replaces_the_idle_connections_the_server_closed() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    tokio::spawn({
        let accepted = Arc::clone(&accepted);
        async move {
            // Every connection is closed 50 ms after it was accepted.
            while let Ok((sock, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    drop(sock);
                });
            }
        }
    });
    let c = client(addr, false);
    let first = c.warm_pool(4).await;
    assert_eq!((first.opened, first.failed), (4, 0), "{first:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = c.warm_pool(4).await;
    assert_eq!((again.opened, again.failed), (4, 0), "{again:?}");
    assert_eq!(reached(&accepted, 8).await, 8);
}
