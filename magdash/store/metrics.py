"""Every computed result as tidy tables in the catalog, for SQL, pandas and other tools.

A cached result (an analysis, a comparison, the carrier controls, a design simulation, E5,
phase diagnostics, probes) is also written as rows of the tables below, in the same transaction as its
cache entry; its recomputation replaces those rows. Every row starts with ``result_key`` (the
cache key: it hashes the model, the stimuli, the data fingerprint, every parameter and the code
version, so two rows with one key come from one computation) and ends with ``computed_at``. A missing
number (no fit, no bootstrap) is NULL, so ``avg`` and friends skip it.

The column lists here are the documentation (``docs/metrics.md`` is generated from them by
:func:`metric_tables_markdown`); a builder that hands the store another set of columns is
refused. The rows are built in one place above the store, :mod:`magdash.runs.rows`, and written
by :mod:`magdash.runs.cache` (with the result, or for a result cached before its tables existed,
when it is next read or by ``python -m magdash backfill``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import duckdb
import pandas as pd
import pyarrow as pa

from magdash.errors import StoreError

_ARROW_TYPES = {
    "VARCHAR": pa.string(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "INTEGER[]": pa.list_(pa.int32()),
    "DOUBLE[]": pa.list_(pa.float64()),
    "VARCHAR[]": pa.list_(pa.string()),
}


@dataclass(frozen=True)
class MetricTable:
    """One tidy table: its name, the kind of cached result that owns its rows, its columns
    as (name, SQL type, meaning) between ``result_key`` and ``computed_at``."""

    name: str
    kind: str
    grain: str
    columns: tuple[tuple[str, str, str], ...]

    @property
    def column_names(self) -> list[str]:
        return [name for name, _, _ in self.columns]

    def ddl(self) -> str:
        body = ", ".join(f'"{name}" {sql_type}' for name, sql_type, _ in self.columns)
        return (
            f"CREATE TABLE IF NOT EXISTS {self.name} (result_key VARCHAR NOT NULL, {body}, "
            "computed_at TIMESTAMP DEFAULT current_timestamp)"
        )


_MODEL = ("model", "VARCHAR", "the model's name in the store")
_STIMULI = ("stimuli", "VARCHAR", "the stimulus set")
_CONVENTIONS = ("conventions", "VARCHAR", "'magdash' or 'paper' (docs/science.md)")
_MEASURE = ("measure", "VARCHAR", "eucl, residual or proj (V_eucl, V_residual, V_proj)")
_LAYER = ("layer", "INTEGER", "0 = embeddings, l = after block l")
_LABEL = ("label", "VARCHAR", "the layer's name")
_CORE = ("core", "BOOLEAN", "in the analysis's core band")
_ANALYSIS_ID = (_MODEL, _STIMULI, _CONVENTIONS)
_BEHAVIOUR_ID = (_MODEL, ("comparisons", "VARCHAR", "the comparison set"))


def _with_interval(name: str, meaning: str) -> tuple[tuple[str, str, str], ...]:
    """A DOUBLE column and its bootstrap interval's two ends."""
    return ((name, "DOUBLE", meaning), (f"{name}_low", "DOUBLE", "its bootstrap interval over trials, lower end"),
            (f"{name}_high", "DOUBLE", "upper end"))

_FIT_COLUMNS = (
    ("alpha", "DOUBLE", "OLS slope of log V on log n"),
    ("ci_low", "DOUBLE", "lower end of alpha's bootstrap interval"),
    ("ci_high", "DOUBLE", "upper end of alpha's bootstrap interval"),
    ("alpha_theil_sen", "DOUBLE", "Theil-Sen slope"),
    ("intercept", "DOUBLE", "OLS intercept"),
    ("r2", "DOUBLE", "R squared of the OLS fit"),
    ("p", "DOUBLE", "p of the OLS slope"),
    ("se", "DOUBLE", "standard error of the OLS slope"),
    ("n_points", "INTEGER", "magnitudes in the fit"),
    ("n_outliers", "INTEGER", "magnitudes left out by the outlier rule"),
)

_STIMULI_B = ("stimuli_b", "VARCHAR", "model B's stimulus set: stimuli, or for a number-format variant the same "
              "carriers and magnitudes in another format (model B is then model A)")

_PHASE_ID = (_MODEL, _STIMULI, ("massive", "VARCHAR", "the vectors' view: keep, drop or standardise"))

_PROBE_ID = (_MODEL, _STIMULI)
_PROBE_TARGET = ("target", "VARCHAR", "log (the probe reads ln n) or linear (n)")
_PROBE_READOUT = (
    ("scheme", "VARCHAR", "carrier (held-out carriers: a new context) or magnitude (held-out magnitudes)"),
    _PROBE_TARGET,
)

METRIC_TABLES: tuple[MetricTable, ...] = (
    MetricTable("analyses", "analysis", "one row per analysis", (
        *_ANALYSIS_ID,
        ("massive", "VARCHAR", "keep, or drop (massive-activation dimensions removed first)"),
        ("measures", "VARCHAR[]", "the measures analysed"),
        ("n_boot", "INTEGER", "bootstrap resamples"),
        ("ci", "DOUBLE", "confidence level of the intervals"),
        ("ci_method", "VARCHAR", "how the intervals were made"),
        ("seed", "BIGINT", "bootstrap seed"),
        ("core_layers", "INTEGER[]", "the core band's layers"),
        ("n_blocks", "INTEGER", "transformer blocks L"),
        ("n_magnitudes", "INTEGER", "magnitudes n"),
        ("params", "VARCHAR", "every parameter, as JSON"),
    )),
    MetricTable("fits", "analysis", "one row per (analysis, measure, layer)", (
        *_ANALYSIS_ID, _MEASURE, _LAYER, _LABEL, _CORE, *_FIT_COLUMNS,
    )),
    MetricTable("hypotheses", "analysis", "one row per (analysis, measure): H1-H4 over the core band", (
        *_ANALYSIS_ID, _MEASURE,
        ("core_layers", "INTEGER[]", "the core band"),
        ("n_valid", "INTEGER", "core layers with a fit"),
        ("mean_alpha", "DOUBLE", "mean core alpha"),
        ("mean_alpha_ci_low", "DOUBLE", "its stimulus-bootstrap interval (carriers and magnitudes resampled once for "
                                        "every core layer), lower end"),
        ("mean_alpha_ci_high", "DOUBLE", "upper end"),
        ("mean_alpha_p", "DOUBLE", "two-sided stimulus-bootstrap p of a mean core alpha of 0"),
        ("n_resamples", "INTEGER", "stimulus resamples behind the interval"),
        ("median_alpha", "DOUBLE", "median core alpha"),
        ("positive_layers", "INTEGER", "core layers with alpha > 0"),
        ("h1", "BOOLEAN", "H1 supported: alpha > 0 at a majority of core layers"),
        ("h1_t", "DOUBLE", "H1 one-sample t of the core alphas (layers share the stimuli: a nominal test)"),
        ("h1_p", "DOUBLE", "H1 p"),
        ("window_low", "DOUBLE", "H2 window, lower end"),
        ("window_high", "DOUBLE", "H2 window, upper end"),
        ("in_window_layers", "INTEGER", "core layers with alpha in the window"),
        ("h2", "BOOLEAN", "H2 supported"),
        ("h2_t", "DOUBLE", "H2 t"),
        ("h2_p", "DOUBLE", "H2 p"),
        ("below_one_layers", "INTEGER", "core layers with alpha < 1"),
        ("h3", "BOOLEAN", "H3 supported"),
        ("h4", "BOOLEAN", "H4 supported: alpha rises with depth"),
        ("h4_rho", "DOUBLE", "H4 Spearman rho of alpha with depth"),
        ("h4_p", "DOUBLE", "H4 p"),
        ("h4_layers", "INTEGER[]", "the layers H4 ran over"),
        ("h4_reachable", "BOOLEAN", "whether a Spearman test over that many layers can give p < .05 at all"),
    )),
    MetricTable("e3", "analysis", "one row per (analysis, measure, core layer): alpha without the boundary magnitudes", (
        *_ANALYSIS_ID, _MEASURE, _LAYER,
        ("alpha_with", "DOUBLE", "alpha on every magnitude"),
        ("alpha_without", "DOUBLE", "alpha without the boundary magnitudes"),
        ("boundary", "DOUBLE[]", "the boundary magnitudes asked for"),
        ("dropped", "DOUBLE[]", "those present and dropped"),
    )),
    MetricTable("e4_layers", "analysis", "one row per (analysis, core layer): on- and off-axis alpha", (
        *_ANALYSIS_ID, _LAYER,
        ("alpha_on", "DOUBLE", "alpha of the variance along PC1 (the magnitude axis)"),
        ("alpha_off", "DOUBLE", "alpha of the variance off it"),
    )),
    MetricTable("e4", "analysis", "one row per analysis: E4 over the core band", (
        *_ANALYSIS_ID,
        ("mean_alpha_on", "DOUBLE", "mean on-axis alpha"),
        ("mean_alpha_off", "DOUBLE", "mean off-axis alpha"),
        ("ratio", "DOUBLE", "mean on / mean off"),
        ("ratio_ci_low", "DOUBLE", "the ratio's stimulus-bootstrap interval, lower end"),
        ("ratio_ci_high", "DOUBLE", "upper end"),
        ("mean_difference", "DOUBLE", "mean on - mean off"),
        ("difference_ci_low", "DOUBLE", "its stimulus-bootstrap interval, lower end"),
        ("difference_ci_high", "DOUBLE", "upper end"),
        ("difference_p", "DOUBLE", "two-sided stimulus-bootstrap p of a difference of 0"),
        ("n_resamples", "INTEGER", "stimulus resamples behind the intervals"),
        ("wilcoxon_statistic", "DOUBLE", "Wilcoxon signed-rank statistic, on vs off, over the core layers (a nominal "
                                         "test: the layers share the stimuli)"),
        ("wilcoxon_p", "DOUBLE", "its p"),
        ("n_pairs", "INTEGER", "layers paired"),
        ("wilcoxon_reachable", "BOOLEAN", "whether that many pairs can give p < .05 at all"),
    )),
    MetricTable("tokenization_fits", "analysis",
                "one row per (analysis, measure, layer) with token facts: alpha adjusted for tokenization", (
        *_ANALYSIS_ID, _MEASURE, _LAYER, _LABEL, _CORE,
        ("alpha_raw", "DOUBLE", "the raw OLS alpha (as in fits)"),
        ("alpha", "DOUBLE", "alpha adjusted for the token count: OLS of log V on log n with a step per token count"),
        ("ci_low", "DOUBLE", "lower end of its bootstrap interval"),
        ("ci_high", "DOUBLE", "upper end"),
        ("se", "DOUBLE", "its standard error"),
        ("p", "DOUBLE", "its p"),
        ("r2", "DOUBLE", "R squared of the adjusted fit"),
        ("n_points", "INTEGER", "magnitudes in the fit (the raw fit's points)"),
        ("n_parameters", "INTEGER", "rank of the design: intercept, slope and the steps"),
        ("df", "INTEGER", "residual degrees of freedom"),
        ("n_strata", "INTEGER", "token counts among the fitted points"),
        ("steps", "VARCHAR", "gamma_k, the step of log V at each token count k over the smallest, as JSON"),
        ("alpha_identity", "DOUBLE", "alpha adjusted for the token count and the kept token's identity"),
        ("identity_ci_low", "DOUBLE", "lower end of its bootstrap interval"),
        ("identity_ci_high", "DOUBLE", "upper end"),
        ("identity_se", "DOUBLE", "its standard error"),
        ("identity_p", "DOUBLE", "its p"),
        ("identity_reason", "VARCHAR", "why there is no alpha_identity ('' when there is one)"),
        ("reason", "VARCHAR", "why there is no adjusted alpha ('' when there is one)"),
    )),
    MetricTable("token_strata", "analysis", "one row per (analysis, measure, layer, token count): alpha within the stratum", (
        *_ANALYSIS_ID, _MEASURE, _LAYER, _LABEL, _CORE,
        ("n_tokens", "INTEGER", "the stratum: magnitudes written in this many tokens"),
        ("n_magnitudes", "INTEGER", "its magnitudes"),
        ("smallest", "DOUBLE", "its smallest magnitude"),
        ("largest", "DOUBLE", "its largest magnitude"),
        *_FIT_COLUMNS,
        ("reason", "VARCHAR", "why there is no fit ('' when there is one)"),
    )),
    MetricTable("comparisons", "compare", "one row per (comparison, measure, layer of model A)", (
        ("model_a", "VARCHAR", "model A"), ("model_b", "VARCHAR", "model B (delta = A - B)"),
        _STIMULI, _STIMULI_B, _CONVENTIONS, _MEASURE,
        ("layer_a", "INTEGER", "A's layer"),
        ("layer_b", "INTEGER", "B's layer at the same depth fraction"),
        ("gamma_a", "DOUBLE", "A's depth fraction l / L"),
        ("gamma_b", "DOUBLE", "B's depth fraction"),
        ("core", "BOOLEAN", "in A's core band"),
        ("alpha_a", "DOUBLE", "A's alpha"),
        ("alpha_b", "DOUBLE", "B's alpha"),
        ("delta", "DOUBLE", "alpha_a - alpha_b"),
        ("ci_low", "DOUBLE", "joint-bootstrap interval of delta, lower end"),
        ("ci_high", "DOUBLE", "upper end"),
    )),
    MetricTable("comparison_tests", "compare", "one row per (comparison, measure): over A's core band", (
        ("model_a", "VARCHAR", "model A"), ("model_b", "VARCHAR", "model B"),
        _STIMULI, _STIMULI_B, _CONVENTIONS, _MEASURE,
        ("mean_alpha_a", "DOUBLE", "A's mean core alpha"),
        ("mean_alpha_b", "DOUBLE", "B's mean alpha at the paired layers"),
        ("mean_delta", "DOUBLE", "mean delta"),
        ("mean_delta_ci_low", "DOUBLE", "its stimulus-bootstrap interval (the same resamples of carriers and magnitudes "
                                        "for every layer of both models), lower end"),
        ("mean_delta_ci_high", "DOUBLE", "upper end"),
        ("mean_delta_p", "DOUBLE", "two-sided stimulus-bootstrap p of a mean delta of 0"),
        ("n_resamples", "INTEGER", "stimulus resamples behind the interval"),
        ("wilcoxon_statistic", "DOUBLE", "Wilcoxon signed-rank statistic of the deltas over the core layers (a nominal "
                                         "test: the layers share the stimuli)"),
        ("wilcoxon_p", "DOUBLE", "its p"),
        ("n_pairs", "INTEGER", "layers paired"),
        ("wilcoxon_reachable", "BOOLEAN", "whether that many pairs can give p < .05 at all"),
    )),
    MetricTable("e5", "e5", "one row per (E5 run, layer): V against corpus frequency", (
        _MODEL, _STIMULI,
        ("source", "VARCHAR", "the frequency source"),
        _MEASURE, _LAYER, _LABEL,
        ("partial_rho", "DOUBLE", "partial Spearman rho of V(n) with log(count(n) + 1) given log n: the test of "
                                  "the frequency account"),
        ("partial_p", "DOUBLE", "its p"),
        ("partial_ci_low", "DOUBLE", "bootstrap interval of partial_rho, lower end"),
        ("partial_ci_high", "DOUBLE", "upper end"),
        ("raw_rho", "DOUBLE", "raw Spearman rho of V(n) with log(count(n) + 1), the paper's E5 (confounded with "
                              "magnitude: counts fall with n)"),
        ("raw_p", "DOUBLE", "its p"),
        ("raw_ci_low", "DOUBLE", "bootstrap interval of raw_rho, lower end"),
        ("raw_ci_high", "DOUBLE", "upper end"),
        ("n", "INTEGER", "magnitudes correlated"),
        ("n_boot", "INTEGER", "bootstrap resamples"),
        ("seed", "BIGINT", "bootstrap seed"),
    )),
    MetricTable("phase_layers", "phase-diagnostics", "one row per (phase run, layer): depth diagnostics", (
        *_PHASE_ID, _LAYER,
        ("gamma", "DOUBLE", "depth fraction l / L"),
        ("dim", "INTEGER", "dimension of the view"),
        ("n_vectors", "INTEGER", "vectors in the layer's sample"),
        ("omega_mean", "DOUBLE", "mean Omega"),
        ("omega_mean_low", "DOUBLE", "bootstrap interval of the mean over the independent units (texts, or "
                                     "magnitudes and carriers), lower end"),
        ("omega_mean_high", "DOUBLE", "upper end"),
        ("omega_std", "DOUBLE", "SD of Omega"),
        ("omega_q05", "DOUBLE", "Omega's 5% quantile"),
        ("omega_q25", "DOUBLE", "25% quantile"),
        ("omega_q50", "DOUBLE", "median"),
        ("omega_q75", "DOUBLE", "75% quantile"),
        ("omega_q95", "DOUBLE", "95% quantile"),
        ("dip", "DOUBLE", "Hartigan's dip of Omega"),
        ("dip_p", "DOUBLE", "its p"),
        ("n_massive", "INTEGER", "massive-activation dimensions of the raw vectors"),
        ("massive_dims", "INTEGER[]", "their indices, largest first"),
        ("massive_share", "DOUBLE", "their share of E||h||^2"),
        ("rank", "INTEGER", "rank of the covariance"),
        ("q", "DOUBLE", "Marchenko-Pastur aspect ratio"),
        ("sigma2", "DOUBLE", "fitted bulk variance; NULL when the MP fit did not converge"),
        ("mp_edge", "DOUBLE", "MP upper edge; NULL when the fit did not converge"),
        ("tw_margin", "DOUBLE", "Tracy-Widom margin above the edge; NULL when the fit did not converge"),
        ("n_spikes", "DOUBLE", "eigenvalues above edge + margin; NULL when the fit did not converge"),
        ("largest_gap", "DOUBLE", "largest eigenvalue gap in units of sigma2; NULL when the fit did not converge"),
        ("gap_rank", "INTEGER", "where it lies"),
        ("effective_rank", "DOUBLE", "exp of the spectral entropy"),
        ("participation_ratio", "DOUBLE", "(sum lambda)^2 / sum lambda^2"),
        ("mp_converged", "BOOLEAN", "the MP fit converged"),
        ("mp_cap", "INTEGER", "the spike cap it may have hit"),
        ("baseline_omega_mean", "DOUBLE", "isotropic Gaussian's mean Omega at this dim"),
        ("baseline_omega_std", "DOUBLE", "its SD"),
        ("baseline_effective_rank", "DOUBLE", "isotropic Gaussian's effective rank"),
        ("baseline_participation_ratio", "DOUBLE", "its participation ratio"),
    )),
    MetricTable("phase_transitions", "phase-diagnostics", "one row per (phase run, curve): gamma_c", (
        *_PHASE_ID,
        ("curve", "VARCHAR", "omega (m(gamma), with interval), spikes or effective_rank"),
        ("gamma_c", "DOUBLE", "depth after the largest change"),
        ("change", "DOUBLE", "that signed change"),
        ("low", "DOUBLE", "percentile interval of gamma_c, lower end"),
        ("high", "DOUBLE", "upper end"),
        ("n_boot", "INTEGER", "bootstrap resamples"),
        ("units", "VARCHAR[]", "what the bootstrap resampled: chunk or prompt (texts), or magnitude and carrier"),
        ("unit_counts", "INTEGER[]", "how many of each"),
    )),
    MetricTable("phase_jumps", "phase-diagnostics", "one row per (phase run, jump): the largest steps of m(gamma)", (
        *_PHASE_ID,
        ("jump", "INTEGER", "1 = the largest step"),
        ("gamma", "DOUBLE", "depth after the step"),
        ("change", "DOUBLE", "signed size"),
        ("low", "DOUBLE", "bootstrap interval of the size, lower end"),
        ("high", "DOUBLE", "upper end"),
        ("p_largest", "DOUBLE", "share of resamples in which this step is the largest"),
    )),
    MetricTable("controls_loo", "controls", "one row per (controls run, measure, layer, carrier left out)", (
        *_ANALYSIS_ID, _MEASURE, _LAYER, _LABEL, _CORE,
        ("carrier", "INTEGER", "the carrier left out"),
        ("alpha_loo", "DOUBLE", "alpha without it"),
        ("alpha_full", "DOUBLE", "alpha with every carrier"),
        ("sign_differs", "BOOLEAN", "the two alphas differ in sign"),
    )),
    MetricTable("controls_icc", "controls", "one row per (controls run, layer): agreement of the carriers' RDMs", (
        *_ANALYSIS_ID, _LAYER, _LABEL, _CORE,
        ("icc", "DOUBLE", "ICC(3,k) of the carriers' RDMs"),
    )),
    MetricTable("controls_permutation", "controls", "one row per (controls run, measure, layer): permutation null", (
        *_ANALYSIS_ID, _MEASURE, _LAYER, _LABEL, _CORE,
        ("alpha", "DOUBLE", "observed alpha"),
        ("p_parametric", "DOUBLE", "OLS p"),
        ("p_permutation", "DOUBLE", "share of permuted |alpha| >= observed"),
        ("n_perm", "INTEGER", "permutations"),
    )),
    MetricTable("designs", "design", "one row per design simulation: the design and its answers", (
        *_ANALYSIS_ID,
        ("magnitudes", "VARCHAR", "the design's magnitude spec"),
        ("n_magnitudes", "INTEGER", "positive magnitudes in the design"),
        ("n_carriers", "INTEGER", "carriers in the design"),
        ("n_layers", "INTEGER", "core layers in the design"),
        ("n_studies", "INTEGER", "simulated studies per point"),
        ("n_boot", "INTEGER", "bootstrap resamples of the layerwise E6 test"),
        ("level", "DOUBLE", "the tests' two-sided level"),
        ("power_target", "DOUBLE", "the power the minimal detectable alpha reaches"),
        ("seed", "BIGINT", "the simulation's seed"),
        ("calibration_rho", "DOUBLE", "correlation of the core layers' magnitude effects, from the model"),
        ("alpha", "DOUBLE", "the true alpha the answers below are at"),
        ("h1_power", "DOUBLE", "H1 t-test power at alpha"),
        ("h1_size", "DOUBLE", "its rejection rate at alpha = 0 (the real size)"),
        ("h1_power_size_adjusted", "DOUBLE", "H1 power at the simulated null's critical t"),
        ("delta", "DOUBLE", "the true delta alpha the E6 answers are at"),
        ("e6_wilcoxon_power", "DOUBLE", "E6 Wilcoxon power at delta"),
        ("e6_wilcoxon_size", "DOUBLE", "its rejection rate at delta = 0"),
        ("e6_bootstrap_layer_power", "DOUBLE", "mean share of core layers whose bootstrap CI excludes 0"),
        ("ci_half_width", "DOUBLE", "expected 95% CI half-width of a layer's alpha"),
        ("minimal_alpha_nominal", "DOUBLE", "smallest alpha with H1 power >= power_target (NULL: none)"),
        ("minimal_alpha_nominal_low", "DOUBLE", "its Monte Carlo band, lower end"),
        ("minimal_alpha_nominal_high", "DOUBLE", "upper end"),
        ("minimal_alpha_size_adjusted", "DOUBLE", "the same for the size-adjusted power"),
        ("minimal_alpha_size_adjusted_low", "DOUBLE", "its Monte Carlo band, lower end"),
        ("minimal_alpha_size_adjusted_high", "DOUBLE", "upper end"),
    )),
    MetricTable("design_h1", "design", "one row per (design simulation, true alpha): H1 power", (
        *_ANALYSIS_ID,
        ("alpha", "DOUBLE", "true alpha of every core layer"),
        ("power", "DOUBLE", "share of studies whose t-test rejects alpha = 0 with t > 0"),
        ("power_low", "DOUBLE", "its 95% Wilson interval, lower end"),
        ("power_high", "DOUBLE", "upper end"),
        ("power_size_adjusted", "DOUBLE", "the same at the simulated null's critical t"),
        ("size_adjusted_low", "DOUBLE", "its Wilson interval, lower end"),
        ("size_adjusted_high", "DOUBLE", "upper end"),
        ("majority", "DOUBLE", "share of studies with alpha > 0 at more than half the core layers"),
        ("mean_alpha", "DOUBLE", "mean fitted alpha"),
    )),
    MetricTable("design_e6", "design", "one row per (design simulation, true delta): E6 power", (
        *_ANALYSIS_ID,
        ("delta", "DOUBLE", "true difference in alpha at every core layer"),
        ("wilcoxon", "DOUBLE", "share of studies whose Wilcoxon test of the paired alphas rejects"),
        ("wilcoxon_low", "DOUBLE", "its 95% Wilson interval, lower end"),
        ("wilcoxon_high", "DOUBLE", "upper end"),
        ("wilcoxon_size_adjusted", "DOUBLE", "the same at the simulated null's critical statistic"),
        ("bootstrap_layers", "DOUBLE", "mean share of core layers whose bootstrap CI of delta excludes 0"),
        ("bootstrap_layers_low", "DOUBLE", "its +-1.96 SE band, lower end"),
        ("bootstrap_layers_high", "DOUBLE", "upper end"),
        ("bootstrap_majority", "DOUBLE", "share of studies where more than half the core layers exclude 0"),
        ("bootstrap_majority_low", "DOUBLE", "its Wilson interval, lower end"),
        ("bootstrap_majority_high", "DOUBLE", "upper end"),
    )),
    MetricTable("design_ci", "design", "one row per (design simulation, setting): expected CI half-width", (
        *_ANALYSIS_ID,
        ("factor", "VARCHAR", "'design', or the factor varied: 'carriers' or 'magnitudes'"),
        ("value", "INTEGER", "its value"),
        ("n_carriers", "INTEGER", "carriers"),
        ("n_magnitudes", "INTEGER", "magnitudes"),
        ("half_width", "DOUBLE", "mean 95% CI half-width of a layer's alpha"),
        ("half_width_low", "DOUBLE", "its +-1.96 SE band, lower end"),
        ("half_width_high", "DOUBLE", "upper end"),
    )),
    MetricTable("probes", "probe", "one row per probe run: its design and parameters", (
        *_PROBE_ID,
        ("targets", "VARCHAR[]", "what the probes read out: log (ln n) and/or linear (n)"),
        ("n_magnitudes", "INTEGER", "magnitudes n"),
        ("n_carriers", "INTEGER", "carriers"),
        ("n_layers", "INTEGER", "layers (probed or left out)"),
        ("magnitude_folds", "INTEGER", "folds of held-out magnitudes"),
        ("carrier_folds", "INTEGER", "folds of held-out carriers (0: leave one carrier out)"),
        ("n_boot", "INTEGER", "bootstrap resamples of the magnitudes"),
        ("ci", "DOUBLE", "confidence level of the intervals"),
        ("seed", "BIGINT", "bootstrap seed"),
        ("control_seed", "BIGINT", "seed of the control task's permutation"),
        ("params", "VARCHAR", "every parameter, as JSON"),
        ("baseline_strata", "VARCHAR", "the baseline's strata: digit count, or digit count and token count"),
    )),
    MetricTable("probe_layers", "probe", "one row per (probe run, layer): how the layer was probed", (
        *_PROBE_ID, _LAYER, _LABEL,
        ("probed", "BOOLEAN", "probed (false: the layer holds Inf/NaN vectors)"),
        ("exact", "BOOLEAN", "on every direction the vectors span (false: the centroids' top principal components)"),
        ("n_features", "INTEGER", "coordinates the probe read"),
        ("variance_kept", "DOUBLE", "share of the layer's variance in those coordinates"),
        ("nonfinite", "INTEGER", "Inf/NaN vectors of the layer"),
    )),
    MetricTable("probe_scores", "probe", "one row per (probe run, layer, scheme, target, task): held-out scores", (
        *_PROBE_ID, _LAYER, _LABEL, *_PROBE_READOUT,
        ("task", "VARCHAR", "real (the labels) or control (labels permuted across magnitudes; Hewitt & Liang 2019)"),
        ("r2", "DOUBLE", "held-out R squared of the target (0: no better than the mean)"),
        ("r2_low", "DOUBLE", "its bootstrap interval over magnitudes, lower end"),
        ("r2_high", "DOUBLE", "upper end"),
        ("baseline_r2", "DOUBLE", "held-out R squared, same folds, of the stratum means (digit count; token count "
                                  "where recorded): what the number's written form alone gives"),
        ("r2_over_baseline", "DOUBLE", "r2 - baseline_r2"),
        ("r2_over_baseline_low", "DOUBLE", "its paired bootstrap interval, lower end (<= 0: not above the baseline)"),
        ("r2_over_baseline_high", "DOUBLE", "upper end"),
        ("r2_within_strata", "DOUBLE", "R squared of predictions and labels each about its stratum's mean, pooled"),
        ("r2_within_strata_low", "DOUBLE", "its bootstrap interval, lower end"),
        ("r2_within_strata_high", "DOUBLE", "upper end"),
        ("n_strata_within", "INTEGER", "strata with two or more magnitudes, which r2_within_strata pools"),
        ("spearman", "DOUBLE", "Spearman rho of the held-out prediction with the target"),
        ("spearman_low", "DOUBLE", "its interval, lower end"),
        ("spearman_high", "DOUBLE", "upper end"),
        ("error_log", "DOUBLE", "mean |ln n-hat - ln n| (0.1: about 10% off)"),
        ("error_log_low", "DOUBLE", "its interval, lower end"),
        ("error_log_high", "DOUBLE", "upper end"),
        ("share_nonpositive", "DOUBLE", "share of predictions with n-hat <= 0 (no logarithm; linear target)"),
        ("alpha", "DOUBLE", "median ridge penalty chosen over the folds (relative to the layer's variance)"),
        ("alpha_at_floor", "DOUBLE", "share of folds that chose the grid's smallest penalty"),
        ("n_folds", "INTEGER", "folds"),
        ("n_magnitudes", "INTEGER", "magnitudes predicted"),
    )),
    MetricTable("probe_selectivity", "probe", "one row per (probe run, layer, scheme, target): real minus control R2", (
        *_PROBE_ID, _LAYER, _LABEL, *_PROBE_READOUT,
        ("selectivity", "DOUBLE", "max(R2 real, 0) - max(R2 control, 0), held out"),
        ("selectivity_low", "DOUBLE", "its paired bootstrap interval, lower end"),
        ("selectivity_high", "DOUBLE", "upper end"),
    )),
    MetricTable("probe_directions", "probe", "one row per (probe run, layer, target): the probe's direction", (
        *_PROBE_ID, _LAYER, _LABEL, _PROBE_TARGET,
        ("cosine_pc1", "DOUBLE", "cosine of the probe direction with the centroids' PC1 (oriented with n)"),
        ("fold_cosine", "DOUBLE", "mean cosine of the held-out-carrier folds' directions with it (NULL where the "
                                  "carriers' predictions do not differ beyond rounding)"),
        ("cosine_previous_layer", "DOUBLE", "cosine with the previous layer's direction (NULL at the first)"),
        ("alpha", "DOUBLE", "ridge penalty of the probe fitted on every vector"),
    )),
    MetricTable("probe_decoded", "probe", "one row per (probe run, layer, target, magnitude): decoded n-hat", (
        *_PROBE_ID, _LAYER, _LABEL, _PROBE_TARGET,
        ("magnitude", "DOUBLE", "n"),
        ("mean_decoded", "DOUBLE", "mean over carriers of the held-out-carrier n-hat"),
        ("sd_decoded", "DOUBLE", "its SD over carriers (ddof 1); 0 where they differ by rounding only"),
        ("weber_fraction", "DOUBLE", "sd_decoded / n"),
    )),
    MetricTable("probe_decoded_scaling", "probe", "one row per (probe run, layer, target): how SD(n-hat) scales", (
        *_PROBE_ID, _LAYER, _LABEL, _PROBE_TARGET,
        ("beta", "DOUBLE", "OLS slope of ln SD(n-hat) on ln n over magnitudes with a spread between carriers"),
        ("beta_low", "DOUBLE", "its bootstrap interval, lower end"),
        ("beta_high", "DOUBLE", "upper end"),
        ("beta_null", "DOUBLE", "beta a read-out of constant error gives for this design (about 1 for a calibrated "
                                "log read-out, whatever the model)"),
        ("beta_null_low", "DOUBLE", "the constant-error permutations' interval, lower end"),
        ("beta_null_high", "DOUBLE", "upper end"),
        ("beta_null_p", "DOUBLE", "two-sided permutation p of beta against beta_null"),
        ("intercept", "DOUBLE", "the fit's intercept"),
        ("weber_mean", "DOUBLE", "mean SD(n-hat) / n over the fitted magnitudes"),
        ("weber_mean_low", "DOUBLE", "its interval, lower end"),
        ("weber_mean_high", "DOUBLE", "upper end"),
        ("calibration", "DOUBLE", "slope of ln mean n-hat on ln n (1: calibrated)"),
        ("n_points", "INTEGER", "magnitudes in the fit"),
        ("note", "VARCHAR", "why there is no fit (no spread between carriers beyond rounding); empty otherwise"),
    )),
    MetricTable("probe_best_layers", "probe", "one row per (probe run, layer, target): the band of best layers", (
        *_PROBE_ID, _LAYER, _LABEL, _PROBE_TARGET,
        ("r2", "DOUBLE", "held-out-magnitude R squared of the real labels"),
        ("gap", "DOUBLE", "the largest such R squared over layers minus this one"),
        ("gap_low", "DOUBLE", "the gap's bootstrap lower bound at the level adjusted for choosing the best, "
                              "(1 - ci) / (layers - 1) (NULL without bootstrap)"),
        ("best", "BOOLEAN", "this layer has the largest R squared"),
        ("in_band", "BOOLEAN", "gap_low <= 0: cannot be told from the best (the best alone without bootstrap)"),
    )),
    MetricTable("behaviour_fits", "behaviour",
                "one row per (behaviour run, task, reference, variant, conventions): the psychometric fit", (
        *_BEHAVIOUR_ID,
        ("task", "VARCHAR", "the prompt template (imported trials: the paper's task)"),
        ("reference", "DOUBLE", "the reference number of the pairs"),
        ("variant", "VARCHAR", "choice (the chosen option) or graded (the soft choice from the logit difference)"),
        _CONVENTIONS,
        ("mu", "DOUBLE", "the function's location on ln(ratio)"),
        ("sigma", "DOUBLE", "its spread on ln(ratio)"),
        ("lapse", "DOUBLE", "the lapse rate"),
        ("weber_fraction", "DOUBLE", "the ratio at 75% correct minus 1 (NULL: undefined, docs/behaviour.md)"),
        ("wf_low", "DOUBLE", "its bootstrap interval, lower end"),
        ("wf_high", "DOUBLE", "upper end"),
        ("threshold", "DOUBLE", "the ratio at 75% correct"),
        ("in_range", "BOOLEAN", "the threshold lies within the tested ratios"),
        ("status", "VARCHAR", "ok, or why the Weber fraction is undefined or out of range"),
        ("n_trials", "INTEGER", "the trials fitted"),
    )),
    MetricTable("behaviour_weber_law", "behaviour",
                "one row per (behaviour run, task, variant, conventions): ln WF against ln reference", (
        *_BEHAVIOUR_ID,
        ("task", "VARCHAR", "the prompt template"),
        ("variant", "VARCHAR", "choice or graded"),
        _CONVENTIONS,
        ("slope", "DOUBLE", "slope of ln WF on ln reference (0: Weber's law)"),
        ("low", "DOUBLE", "its interval, lower end"),
        ("high", "DOUBLE", "upper end"),
        ("n_references", "INTEGER", "the references with a defined Weber fraction it rests on"),
        ("status", "VARCHAR", "ok, or why no slope"),
    )),
    MetricTable("steering_layers", "steer",
                "one row per (steering run, layer): the magnitude direction's push against the nulls, at the "
                "largest dose", (
        _MODEL, _STIMULI, ("comparisons", "VARCHAR", "the comparison set whose trials were steered"),
        ("direction", "VARCHAR", "probe (the log-n probe's unit weight vector) or pc1 (the centroids' PC1)"),
        ("operand", "VARCHAR", "the operand whose number was pushed: a or b"),
        _LAYER,
        ("dose_unit", "DOUBLE", "the span of the magnitudes' centroid projections on the direction"),
        ("top_dimension_share", "DOUBLE", "the share of the direction's squared norm on its 3 largest coordinates "
                                          "(above 0.5: it may push massive dimensions)"),
        ("n_trials", "INTEGER", "the trials summarised"),
        ("baseline_correct", "DOUBLE", "mean unpatched p(correct) over the two options"),
        *_with_interval("magnitude_effect", "mean |delta p(correct)| along the magnitude direction"),
        *_with_interval("random_effect", "mean |delta p(correct)| along the random directions"),
        ("random_percentile", "DOUBLE", "the null_percentile-th percentile of the random directions' mean |delta p|"),
        *_with_interval("specificity", "magnitude_effect / random_effect"),
        *_with_interval("specificity_percentile", "magnitude_effect / random_percentile"),
        *_with_interval("share_above_random", "share of trials whose |delta p| exceeds their random directions' "
                                              "null_percentile-th percentile"),
        ("relevant", "BOOLEAN", "functional relevance (Cacioli 2026's H7): share_above_random >= relevance_share"),
        *_with_interval("orthogonal_effect", "mean |delta p(correct)| along the orthogonal directions (NULL: none)"),
        *_with_interval("specificity_orthogonal", "magnitude_effect / orthogonal_effect"),
        *_with_interval("share_above_orthogonal", "share of trials above their orthogonal directions' percentile"),
        *_with_interval("shift", "mean delta p(choose the pushed operand) along the magnitude direction"),
        ("random_shift", "DOUBLE", "the same along the random directions"),
        ("option_mass", "DOUBLE", "mean patched p_a + p_b over the unpatched, along the magnitude direction"),
    )),
)

TABLES_BY_NAME = {table.name: table for table in METRIC_TABLES}

LATEST_ANALYSES_VIEW = """CREATE OR REPLACE VIEW latest_analyses AS
    SELECT * FROM analyses
    QUALIFY row_number() OVER (
        PARTITION BY model, stimuli, conventions, massive ORDER BY computed_at DESC, result_key) = 1"""
"""The newest analysis of each (model, stimuli, conventions, massive): a cache keeps the results of
earlier parameters and data beside the newest, so a query averaging ``fits`` picks these."""


def schema_statements() -> list[str]:
    """Every table and the view (the schema of a new store and of the migration to schema 4)."""
    return [*(table.ddl() for table in METRIC_TABLES), LATEST_ANALYSES_VIEW]


def add_missing_columns(connection: duckdb.DuckDBPyConnection) -> None:
    """Create every metric table the store lacks and add every column its tables lack (at their
    end: rows are written by column name), all with ``IF NOT EXISTS``."""
    for table in METRIC_TABLES:
        connection.execute(table.ddl())
        for name, sql_type, _ in table.columns:
            connection.execute(f'ALTER TABLE {table.name} ADD COLUMN IF NOT EXISTS "{name}" {sql_type}')


def tables_of(kind: str) -> list[MetricTable]:
    """The metric tables whose rows a result of ``kind`` owns (none for other kinds)."""
    return [table for table in METRIC_TABLES if table.kind == kind]


def replace_rows(
    connection: duckdb.DuckDBPyConnection,
    key: str,
    kind: str,
    frames: Mapping[str, pd.DataFrame],
    computed_at: object | None = None,
) -> None:
    """Replace every metric row of result ``key`` by ``frames`` (table name -> rows), on an
    open transaction. Each frame must hold exactly its table's columns (order free)."""
    owned = {table.name: table for table in tables_of(kind)}
    foreign = sorted(set(frames) - set(owned))
    if foreign:
        raise StoreError(f"a {kind} result has no metric tables {foreign}; its tables are {sorted(owned)}")
    for name, table in owned.items():
        _check_columns(connection, table)
        connection.execute(f"DELETE FROM {name} WHERE result_key = ?", [key])
        frame = frames.get(name)
        if frame is None or frame.empty:
            continue
        connection.register("metric_rows", _arrow_rows(table, key, frame))
        try:
            columns = ", ".join(f'"{column}"' for column in ["result_key", *table.column_names])
            if computed_at is None:
                connection.execute(f"INSERT INTO {name} ({columns}) SELECT {columns} FROM metric_rows")
            else:
                connection.execute(
                    f"INSERT INTO {name} ({columns}, computed_at) SELECT {columns}, ? FROM metric_rows", [computed_at]
                )
        finally:
            connection.unregister("metric_rows")


def _check_columns(connection: duckdb.DuckDBPyConnection, table: MetricTable) -> None:
    """A StoreError, before anything is written, when the store's table lacks a column this magdash writes
    (a store made by a development build between two schema versions)."""
    present = {row[0] for row in connection.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_catalog = current_database() "
        "AND table_schema = current_schema() AND table_name = ?", [table.name]).fetchall()}
    missing = [column for column in table.column_names if column not in present]
    if missing:
        raise StoreError(
            f"the store's table {table.name} lacks the column(s) {missing} that this magdash writes, though its "
            "schema version is current: it was made by another build of magdash. Nothing was written; run this "
            "in a new store (store=)"
        )


def _arrow_rows(table: MetricTable, key: str, frame: pd.DataFrame) -> pa.Table:
    expected, given = set(table.column_names), set(frame.columns)
    if expected != given:
        raise StoreError(
            f"rows for {table.name} have the wrong columns: missing {sorted(expected - given)}, "
            f"unknown {sorted(given - expected)}"
        )
    arrays = {"result_key": pa.array([key] * len(frame), pa.string())}
    for name, sql_type, _ in table.columns:
        values = frame[name].tolist()
        if sql_type.endswith("[]"):
            values = [None if item is None else list(item) for item in values]
        arrays[name] = pa.array(values, _ARROW_TYPES[sql_type], from_pandas=True)
    return pa.table(arrays)


def metric_tables_markdown() -> str:
    """The tables and their columns as Markdown (``docs/metrics.md``)."""
    lines = []
    for table in METRIC_TABLES:
        lines += [f"### `{table.name}`", "", f"{table.grain} (owned by a `{table.kind}` result).", "",
                  "| column | type | meaning |", "|---|---|---|",
                  "| `result_key` | VARCHAR | the cache key of the result the row belongs to |"]
        lines += [f"| `{name}` | {sql_type} | {meaning} |" for name, sql_type, meaning in table.columns]
        lines += ["| `computed_at` | TIMESTAMP | when the result was computed |", ""]
    lines += ["### `latest_analyses` (a view)", "",
              "The `analyses` rows of the newest analysis of each (model, stimuli, conventions, massive).", ""]
    return "\n".join(lines)
