//! Gate and overhead-budget declarations as written in a suite's `[gates]` and
//! `[overhead]` tables: the report model's types ([`inferscope_model::gate_spec`]), read by
//! [`crate::evaluate`].

pub use inferscope_model::gate_spec::{GateSpec, OverheadSpec, PercentileBounds, WhenUnavailable};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_bounds_override_suite_bounds_field_by_field() {
        let suite: GateSpec =
            toml::from_str("max_error_rate = 0.1\nttft_ms = { p50 = 100.0, p99 = 500.0 }").unwrap();
        let job: GateSpec = toml::from_str("ttft_ms = { p99 = 250.0 }").unwrap();
        let m = suite.merged_with(&job);
        let t = m.ttft_ms.unwrap();
        assert_eq!(t.p50, Some(100.0));
        assert_eq!(t.p99, Some(250.0));
        assert_eq!(m.max_error_rate, Some(0.1));
    }

    #[test]
    fn unknown_gate_key_is_rejected() {
        let e = toml::from_str::<GateSpec>("ttft_ms = { p999 = 1.0 }").unwrap_err();
        assert!(e.to_string().contains("p999"), "{e}");
    }
}
