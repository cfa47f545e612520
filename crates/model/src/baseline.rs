//! Comparisons with a saved baseline as reported (`jobs[].baseline`): per figure the
//! change and a verdict (moved here from `baseline::compare`, which computes them).

use serde::{Deserialize, Serialize};

/// One figure with its spread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureSummary {
    /// The statistic on all samples (ms).
    pub value: f64,
    /// Lower end of the 95 % CI (ms); `null` when too few samples bound it.
    pub ci_low: Option<f64>,
    /// Upper end of the 95 % CI (ms); `null` when too few samples bound it.
    pub ci_high: Option<f64>,
    /// Samples in the population.
    pub n: u64,
    /// 25th percentile of the samples (ms).
    pub p25: f64,
    /// 75th percentile of the samples (ms).
    pub p75: f64,
    /// Unit of value and interval: `ms`.
    pub unit: String,
}

/// A figure's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeVerdict {
    /// Better beyond the spread of both runs and the noise threshold.
    Improved,
    /// Worse beyond the spread of both runs and the noise threshold.
    Regressed,
    /// Not distinguishable from noise.
    WithinNoise,
}

impl ChangeVerdict {
    /// `improved`, `regressed` or `within noise`.
    pub fn label(self) -> &'static str {
        match self {
            ChangeVerdict::Improved => "improved",
            ChangeVerdict::Regressed => "regressed",
            ChangeVerdict::WithinNoise => "within noise",
        }
    }
}

/// One figure compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureChange {
    /// Figure name, e.g. `ttft_ms.p99`.
    pub figure: String,
    /// The baseline's figure.
    pub baseline: FigureSummary,
    /// This run's figure.
    pub current: FigureSummary,
    /// Relative change, percent (positive = slower); `null` when the baseline is ≤ 0.
    pub change_pct: Option<f64>,
    /// The verdict.
    pub verdict: ChangeVerdict,
}

/// One job compared (`jobs[].baseline` in report.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobComparison {
    /// `suite::job`.
    pub job: String,
    /// Baseline name.
    pub baseline: String,
    /// The run the baseline was saved from.
    pub baseline_run_id: String,
    /// Noise threshold applied, percent.
    pub noise_pct: f64,
    /// Figures present in both, in name order.
    pub figures: Vec<FigureChange>,
    /// Figures of the baseline this run lacks (e.g. no successful request).
    pub missing: Vec<String>,
}

impl JobComparison {
    /// Figures with the given verdict.
    pub fn count(&self, v: ChangeVerdict) -> usize {
        self.figures.iter().filter(|f| f.verdict == v).count()
    }

    /// The worst regression, percent: the largest `change_pct` among regressed figures,
    /// 0 when none regressed.
    pub fn worst_regression_pct(&self) -> f64 {
        self.figures
            .iter()
            .filter(|f| f.verdict == ChangeVerdict::Regressed)
            .map(|f| f.change_pct.unwrap_or(f64::INFINITY))
            .fold(0.0, f64::max)
    }
}
