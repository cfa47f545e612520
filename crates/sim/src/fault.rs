//! Fault selection for one request: every-Nth rules from [`FaultConfig`] merged with the
//! per-request `x-inferscope-sim-fault` header. Pure: no I/O.

use super::config::FaultConfig;

/// Request header that forces faults on one request. Its value is a comma-separated list
/// of `error_mid_stream`, `disconnect`, `slow_first_byte=MS`, `no_usage`, `no_done`.
/// An unknown item is a 400.
pub const FAULT_HEADER: &str = "x-inferscope-sim-fault";

/// The faults that apply to one request (semantics in [`FaultConfig`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Send an error object after half the tokens.
    pub error_mid_stream: bool,
    /// Drop the connection after half the tokens (wins over `error_mid_stream`).
    pub disconnect: bool,
    /// Delay before the response starts, ms (0 = none).
    pub slow_first_byte_ms: u64,
    /// Omit usage.
    pub no_usage: bool,
    /// Omit `data: [DONE]`.
    pub no_done: bool,
}

fn every(n: u64, request_number: u64) -> bool {
    n != 0 && request_number.is_multiple_of(n)
}

impl Faults {
    /// Faults of the `request_number`-th chat request (1-based) under `cfg`.
    pub fn for_request(cfg: &FaultConfig, request_number: u64) -> Self {
        Self {
            error_mid_stream: every(cfg.error_mid_stream_every, request_number),
            disconnect: every(cfg.disconnect_every, request_number),
            slow_first_byte_ms: if every(cfg.slow_first_byte_every, request_number) {
                cfg.slow_first_byte_ms
            } else {
                0
            },
            no_usage: every(cfg.no_usage_every, request_number),
            no_done: every(cfg.no_done_every, request_number),
        }
    }

    /// Parses a [`FAULT_HEADER`] value. Errors name the offending item.
    pub fn parse_header(value: &str) -> Result<Self, String> {
        let mut f = Self::default();
        for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "error_mid_stream" => f.error_mid_stream = true,
                "disconnect" => f.disconnect = true,
                "no_usage" => f.no_usage = true,
                "no_done" => f.no_done = true,
                _ => match item.strip_prefix("slow_first_byte=") {
                    Some(ms) => {
                        f.slow_first_byte_ms = ms.trim().parse().map_err(|_| {
                            format!("{FAULT_HEADER}: `{item}`: MS must be an integer")
                        })?
                    }
                    None => {
                        return Err(format!(
                            "{FAULT_HEADER}: unknown fault `{item}` (expected error_mid_stream, \
                             disconnect, slow_first_byte=MS, no_usage, no_done)"
                        ));
                    }
                },
            }
        }
        Ok(f)
    }

    /// Union of two fault sets (the longer slow-first-byte delay wins).
    pub fn merge(self, o: Self) -> Self {
        Self {
            error_mid_stream: self.error_mid_stream || o.error_mid_stream,
            disconnect: self.disconnect || o.disconnect,
            slow_first_byte_ms: self.slow_first_byte_ms.max(o.slow_first_byte_ms),
            no_usage: self.no_usage || o.no_usage,
            no_done: self.no_done || o.no_done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nth() {
        let cfg = FaultConfig {
            disconnect_every: 3,
            slow_first_byte_every: 2,
            slow_first_byte_ms: 40,
            ..FaultConfig::default()
        };
        let hits: Vec<u64> = (1..=9)
            .filter(|&n| Faults::for_request(&cfg, n).disconnect)
            .collect();
        assert_eq!(hits, vec![3, 6, 9]);
        assert_eq!(Faults::for_request(&cfg, 2).slow_first_byte_ms, 40);
        assert_eq!(Faults::for_request(&cfg, 3).slow_first_byte_ms, 0);
        assert_eq!(
            Faults::for_request(&FaultConfig::default(), 1),
            Faults::default()
        );
    }

    #[test]
    fn header_parsing() {
        let f = Faults::parse_header("no_usage, slow_first_byte=250,no_done").unwrap();
        assert_eq!(
            f,
            Faults {
                no_usage: true,
                no_done: true,
                slow_first_byte_ms: 250,
                ..Faults::default()
            }
        );
        assert!(Faults::parse_header("disconnect").unwrap().disconnect);
        assert!(
            Faults::parse_header("error_mid_stream")
                .unwrap()
                .error_mid_stream
        );
        assert!(Faults::parse_header("explode").is_err());
        assert!(Faults::parse_header("slow_first_byte=x").is_err());
        let m = f.merge(Faults {
            disconnect: true,
            slow_first_byte_ms: 10,
            ..Faults::default()
        });
        assert!(m.disconnect && m.no_usage && m.slow_first_byte_ms == 250);
    }
}
