"""How a number is written for a reader, the same in the CLI, tables, the report and the app.

A number that does not exist (no fit at the embedding layer, a test undefined for constant
data) is written :data:`MISSING`, never as a number and never as "nan".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from magdash.params import ranges

MISSING = "—"

_WIDTH = re.compile(r"[^\d.]*(\d+)")


def format_number(value: Any, spec: str = ".4g") -> str:
    """``value`` formatted with the format ``spec``; :data:`MISSING` (padded to the spec's width)
    when it is None, NaN or infinite."""
    number = None if value is None else float(value)
    if number is None or not math.isfinite(number):
        width = _WIDTH.match(spec)
        return f"{MISSING:>{width.group(1)}}" if width else MISSING
    return format(number, spec)


def layer_span(layers: Sequence[int]) -> str:
    """Layers as the command line takes them (``--core-layers``): "3-5", "1-3, 7" ("none" when empty)."""
    return ranges(layers) if len(layers) else "none"


def fixed(value: Any, digits: int = 3) -> str:
    """A number for a sentence, with ``digits`` decimals (:data:`MISSING` when there is none)."""
    return format_number(value, f".{digits}f")


def format_p(value: Any) -> str:
    """A p-value in a sentence: two significant digits, scientific below 0.001."""
    number = None if value is None else float(value)
    if number is None or not math.isfinite(number) or number >= 1e-3:
        return format_number(number, ".2g")
    return format_number(number, ".1e")


P_VALUE = "p"
"""Kind of a column of p-values: shown in scientific notation (:data:`P_FORMAT`, :func:`format_p`)."""

SHARE = "share"
"""Kind of a column of shares between 0 and 1 (of resamples, of variance, of folds): shown as a
percentage (:func:`format_share`), never as a p-value, whatever its name."""


@dataclass(frozen=True)
class Column:
    """What a reader is told about one column of the tables the app, its CSVs and the report show.

    Attributes:
        label: what the column holds, in words.
        unit: its unit ("dimensions", "tokens", "characters", "%"), "" for a pure number or text.
        kind: :data:`P_VALUE`, :data:`SHARE`, or "" for any other column.
    """

    label: str
    unit: str = ""
    kind: str = ""

    @property
    def header(self) -> str:
        """The label with its unit: "width (dimensions)"."""
        return f"{self.label} ({self.unit})" if self.unit else self.label


def _p(label: str) -> Column:
    return Column(label, kind=P_VALUE)


def _share(label: str) -> Column:
    return Column(label, "%", SHARE)


COLUMNS: dict[str, Column] = {
    # -- what a row is about
    "model": Column("model"),
    "name": Column("model"),
    "series": Column("series"),
    "role": Column("role"),
    "variant": Column("variant"),
    "kind": Column("kind of variant"),
    "control": Column("control"),
    "status": Column("status"),
    "verdict": Column("verdict"),
    "note": Column("note"),
    "reason": Column("why there is no value"),
    "identity_reason": Column("why there is no alpha adjusted for the kept token"),
    "measure": Column("measure"),
    "measure_label": Column("measure"),
    "layer": Column("layer"),
    "label": Column("layer name"),
    "gamma": Column("depth gamma = l/L"),
    "core": Column("core layer"),
    "view": Column("view of the vectors"),
    "scheme": Column("held out"),
    "target": Column("probe reads"),
    "task": Column("labels"),
    "magnitude": Column("magnitude n"),
    "magnitudes": Column("magnitude range"),
    "carrier": Column("carrier"),
    "template_name": Column("template (the trials' task)"),
    "template": Column("prompt template"),
    "sentence": Column("sentence"),
    "stratum": Column("token-count stratum"),
    "quantity": Column("quantity"),
    "value": Column("value"),
    # -- the Home and Extract pages: the stored models
    "architecture": Column("architecture"),
    "blocks": Column("blocks"),
    "width": Column("width", "dimensions"),
    "dtype": Column("dtype"),
    "weights": Column("weights"),
    "position": Column("token position"),
    "complete sets": Column("complete stimulus sets"),
    "unfinished": Column("unfinished extractions (items done/total)"),
    "set_name": Column("stimulus set"),
    "model_id": Column("model id"),
    "source": Column("source"),
    "fingerprint": Column("weights fingerprint"),
    "n_blocks": Column("blocks"),
    "hidden_size": Column("width", "dimensions"),
    "stimuli": Column("stimulus set"),
    "data_fingerprint": Column("data fingerprint"),
    "is_random": Column("random-weight control"),
    "done": Column("items extracted"),
    "total": Column("items in the set"),
    # -- tokenization (the Stimuli preview, the Scaling page's token facts and strata)
    "number_tokens": Column("the number's tokens"),
    "n_number_tokens": Column("number length", "tokens"),
    "kept": Column("kept token(s)"),
    "tokens": Column("sentence's tokens"),
    "first_position": Column("kept token at position 0"),
    "n_tokens": Column("number length", "tokens"),
    "kept_id": Column("kept token id"),
    "kept_text": Column("kept token"),
    "n_chars": Column("number length", "characters"),
    "n_digits": Column("digits"),
    "uniform": Column("same tokens in every carrier"),
    "n_strata": Column("token-count strata fitted"),
    "steps": Column("steps of log V by token count (gamma k)"),
    "n_magnitudes": Column("magnitudes"),
    "fitted_layers": Column("layers fitted"),
    # -- scaling fits (alpha: the slope of log V on log n)
    "alpha": Column("alpha"),
    "alpha_raw": Column("alpha, raw"),
    "alpha_identity": Column("alpha adjusted for count and kept token"),
    "identity_ci_low": Column("its CI low"),
    "identity_ci_high": Column("its CI high"),
    "intercept": Column("intercept (log V at n = 1)"),
    "alpha_theil_sen": Column("alpha (Theil–Sen)"),
    "ci_low": Column("CI low"),
    "ci_high": Column("CI high"),
    "r2": Column("R²"),
    "p": _p("p of alpha (OLS)"),
    "se": Column("SE of alpha"),
    "n_points": Column("points fitted"),
    "n_outliers": Column("outliers left out"),
    "n_params": Column("parameters"),
    "mean_alpha": Column("mean core alpha"),
    "mean_alpha_raw": Column("mean core alpha, raw"),
    "mean_alpha_dropped": Column("mean core alpha, massive dimensions dropped"),
    "shift": Column("shift of mean core alpha (dropped − raw)"),
    "sign_holds": Column("sign holds"),
    # -- the Weber page: the hypotheses and the noise models
    "positive_layers": Column("layers with alpha > 0"),
    "in_window_layers": Column("layers in the Weber window"),
    "below_one_layers": Column("layers with alpha < 1"),
    "core_layers": Column("core layers"),
    "mean_alpha_ci_low": Column("mean alpha CI low (stimuli)"),
    "mean_alpha_ci_high": Column("mean alpha CI high (stimuli)"),
    "mean_alpha_p": _p("mean alpha p (stimuli)"),
    "H1": Column("H1: alpha > 0"),
    "H2": Column("H2: alpha in the Weber window"),
    "H3": Column("H3: alpha < 1"),
    "H4": Column("H4: alpha changes with depth"),
    "h1_p": _p("H1 p (t over layers)"),
    "h2_p": _p("H2 p (t over layers)"),
    "h4_rho": Column("H4 Spearman rho (alpha vs depth)"),
    "h4_p": _p("H4 p (over layers)"),
    "h4_layers": Column("H4 layers"),
    "model_label": Column("noise model"),
    "formula": Column("formula"),
    "k": Column("k (scale)"),
    "c": Column("c (constant)"),
    "rss": Column("RSS"),
    "aic": Column("AIC"),
    "aicc": Column("AICc"),
    "delta_aicc": Column("delta AICc (to the best)"),
    "weight": Column("Akaike weight"),
    "noise_model": Column("noise model"),
    "best_in_core_layers": Column("core layers it fits best"),
    "mean_weight": Column("mean Akaike weight"),
    # -- E3 (the digit-count boundary magnitudes) and E4 (on- and off-axis variance)
    "dropped": Column("boundary magnitudes dropped"),
    "mean_alpha_with": Column("mean core alpha with them"),
    "mean_alpha_without": Column("mean core alpha without them"),
    "mean_shift": Column("mean shift of alpha"),
    "mean_alpha_on": Column("mean core alpha, on-axis variance"),
    "mean_alpha_off": Column("mean core alpha, off-axis variance"),
    "ratio": Column("ratio of the means"),
    "mean_difference": Column("mean difference"),
    "n_pairs": Column("core layers paired"),
    # -- comparisons, variants and the stimulus bootstrap
    "model_a": Column("model A"),
    "model_b": Column("model B"),
    "layer_a": Column("layer A"),
    "layer_b": Column("layer B"),
    "gamma_a": Column("depth A"),
    "gamma_b": Column("depth B"),
    "alpha_a": Column("alpha A"),
    "alpha_b": Column("alpha B"),
    "delta": Column("delta alpha (A − B)"),
    "mean_alpha_a": Column("mean core alpha A"),
    "mean_alpha_b": Column("mean core alpha B"),
    "mean_delta": Column("mean core delta alpha (model − variant)"),
    "mean_delta_ci_low": Column("mean delta CI low (stimuli)"),
    "mean_delta_ci_high": Column("mean delta CI high (stimuli)"),
    "mean_delta_p": _p("mean delta p (stimuli)"),
    "difference_ci_low": Column("difference CI low (stimuli)"),
    "difference_ci_high": Column("difference CI high (stimuli)"),
    "difference_p": _p("difference p (stimuli)"),
    "ratio_ci_low": Column("ratio CI low (stimuli)"),
    "ratio_ci_high": Column("ratio CI high (stimuli)"),
    "n_resamples": Column("stimulus resamples"),
    "wilcoxon_statistic": Column("Wilcoxon W (over layers)"),
    "wilcoxon_p": _p("Wilcoxon p (over layers)"),
    "wilcoxon_reachable": Column("Wilcoxon can reach .05"),
    "mean_alpha_model": Column("mean core alpha, model"),
    "mean_alpha_variant": Column("mean core alpha, variant"),
    "max_abs_delta": Column("largest |delta alpha|"),
    "layer_of_max": Column("layer of the largest |delta|"),
    "ci_low_at_max": Column("its CI low"),
    "ci_high_at_max": Column("its CI high"),
    "layers_ci_excludes_zero": Column("core layers whose CI excludes 0"),
    "layers_with_ci": Column("core layers with a CI"),
    "n_core": Column("core layers"),
    # -- the Controls page
    "mean_core_alpha_without": Column("mean core alpha without this carrier"),
    "mean_core_alpha_all": Column("mean core alpha, every carrier"),
    "core_layers_sign_differs": Column("core layers whose alpha changes sign"),
    "sign_differs": Column("alpha changes sign"),
    "icc": Column("ICC(3,k) of the carriers' RDMs"),
    "p_parametric": _p("p of alpha (OLS)"),
    "p_permutation": _p("p of alpha (permutation)"),
    "n_perm": Column("permutations"),
    # -- frequency (E5 and the count fits)
    "rho": Column("Spearman rho"),
    "partial_rho": Column("partial rho (given log n)"),
    "partial_p": _p("partial p"),
    "partial_ci_low": Column("partial rho CI low"),
    "partial_ci_high": Column("partial rho CI high"),
    "raw_rho": Column("raw rho (the paper's E5)"),
    "raw_p": _p("raw p"),
    "raw_ci_low": Column("raw rho CI low"),
    "raw_ci_high": Column("raw rho CI high"),
    "n": Column("magnitudes correlated"),
    "count": Column("corpus count"),
    "V": Column("V (spread across carriers)"),
    "distribution": Column("fitted distribution"),
    "parameter_name": Column("parameter name"),
    "parameter": Column("parameter"),
    "amplitude": Column("amplitude"),
    "space": Column("fitted on"),
    "best_aic": Column("best by AIC"),
    # -- geometry
    "rsa_log_euclidean": Column("RSA log-ratio (Euclidean)"),
    "rsa_linear_euclidean": Column("RSA linear (Euclidean)"),
    "rsa_log_cosine": Column("RSA log-ratio (cosine)"),
    "rsa_linear_cosine": Column("RSA linear (cosine)"),
    "pc1_pearson": Column("PC1 vs log n (Pearson r)"),
    "pc1_spearman": Column("PC1 vs log n (Spearman)"),
    "pc1_explained": _share("PC1 share of variance"),
    # -- probes (R²: held out; carrier: unseen carriers, magnitude: unseen magnitudes)
    "exact": Column("probe on every direction (not the top PCs)"),
    "n_features": Column("coordinates read", "dimensions"),
    "r2_carrier_real": Column("R², unseen carriers"),
    "r2_low_carrier_real": Column("R², unseen carriers, CI low"),
    "r2_high_carrier_real": Column("R², unseen carriers, CI high"),
    "r2_magnitude_real": Column("R², unseen magnitudes"),
    "baseline_r2_magnitude_real": Column("digit-count baseline R², unseen magnitudes"),
    "r2_within_strata_magnitude_real": Column("R² within digit-count strata, unseen magnitudes"),
    "r2_carrier_control": Column("R², control task, unseen carriers"),
    "in_best_band": Column("in the band of best layers"),
    "selectivity_carrier": Column("selectivity (R² real − R² control)"),
    "cosine_pc1": Column("cosine of the direction with PC1"),
    "fold_cosine": Column("mean cosine of the folds' directions"),
    "beta": Column("beta (slope of ln SD(n-hat) on ln n)"),
    "beta_low": Column("beta CI low"),
    "beta_high": Column("beta CI high"),
    "beta_null": Column("beta of a constant-error read-out"),
    "beta_null_p": _p("p of beta against it (permutation)"),
    "weber_mean": Column("mean SD(n-hat)/n"),
    "calibration": Column("calibration (slope of ln mean n-hat on ln n)"),
    "r2_carrier_random": Column("R², unseen carriers, @random control"),
    "r2_magnitude_random": Column("R², unseen magnitudes, @random control"),
    "beta_random": Column("beta, @random control"),
    "r2_model": Column("R², model"),
    "r2_low_model": Column("R², model, CI low"),
    "r2_high_model": Column("R², model, CI high"),
    "spearman_model": Column("Spearman rho, model"),
    "spearman_low_model": Column("Spearman rho, model, CI low"),
    "spearman_high_model": Column("Spearman rho, model, CI high"),
    "error_log_model": Column("mean |ln n-hat − ln n|, model"),
    "error_log_low_model": Column("mean |ln n-hat − ln n|, model, CI low"),
    "error_log_high_model": Column("mean |ln n-hat − ln n|, model, CI high"),
    "r2_control": Column("R², @random control"),
    "r2_low_control": Column("R², @random control, CI low"),
    "r2_high_control": Column("R², @random control, CI high"),
    "spearman_control": Column("Spearman rho, @random control"),
    "spearman_low_control": Column("Spearman rho, @random control, CI low"),
    "spearman_high_control": Column("Spearman rho, @random control, CI high"),
    "error_log_control": Column("mean |ln n-hat − ln n|, @random control"),
    "error_log_low_control": Column("mean |ln n-hat − ln n|, @random control, CI low"),
    "error_log_high_control": Column("mean |ln n-hat − ln n|, @random control, CI high"),
    "r2_difference": Column("R² difference (model − control)"),
    "mean_decoded": Column("mean decoded n-hat"),
    "sd_decoded": Column("SD of decoded n-hat across carriers"),
    # The probe's spread of decoded magnitudes across carriers: its error, not a Weber fraction of the model.
    "weber_fraction": Column("SD(n-hat)/n"),
    "r2_low": Column("R² CI low"),
    "r2_high": Column("R² CI high"),
    "baseline_r2": Column("digit-count baseline R²"),
    "r2_over_baseline": Column("R² over the baseline"),
    "r2_over_baseline_low": Column("R² over the baseline, CI low"),
    "r2_over_baseline_high": Column("R² over the baseline, CI high"),
    "r2_within_strata": Column("R² within digit-count strata"),
    "r2_within_strata_low": Column("R² within strata, CI low"),
    "r2_within_strata_high": Column("R² within strata, CI high"),
    "n_strata_within": Column("strata pooled"),
    "spearman": Column("Spearman rho"),
    "spearman_low": Column("Spearman rho CI low"),
    "spearman_high": Column("Spearman rho CI high"),
    "error_log": Column("mean |ln n-hat − ln n|"),
    "error_log_low": Column("mean |ln n-hat − ln n|, CI low"),
    "error_log_high": Column("mean |ln n-hat − ln n|, CI high"),
    "share_nonpositive": _share("predictions with n-hat <= 0"),
    "ridge_alpha": Column("ridge penalty"),
    "alpha_at_floor": _share("folds at the smallest penalty"),
    "n_folds": Column("folds"),
    # -- depth (Omega, the spectrum, m(gamma))
    "jump": Column("step (1 = largest)"),
    "change": Column("change of m(gamma)"),
    # A share of bootstrap resamples, not a p-value, though its name starts with p_.
    "p_largest": _share("resamples where this step is the largest"),
    "dim": Column("width of the view", "dimensions"),
    "n_vectors": Column("vectors in the sample"),
    "omega_mean": Column("mean Omega"),
    "omega_mean_low": Column("mean Omega CI low"),
    "omega_mean_high": Column("mean Omega CI high"),
    "omega_std": Column("SD of Omega"),
    "n_massive": Column("massive dimensions"),
    "massive_dims": Column("massive dimensions (indices)"),
    "massive_share": _share("massive dimensions' share of E‖h‖²"),
    "omega_q05": Column("Omega 5% quantile"),
    "omega_q25": Column("Omega 25% quantile"),
    "omega_q50": Column("Omega median"),
    "omega_q75": Column("Omega 75% quantile"),
    "omega_q95": Column("Omega 95% quantile"),
    "dip": Column("Hartigan's dip of Omega"),
    "dip_p": _p("dip p"),
    "rank": Column("covariance rank"),
    "q": Column("MP aspect ratio q = d/N"),
    "sigma2": Column("MP bulk variance sigma²"),
    "mp_edge": Column("MP upper edge"),
    "tw_margin": Column("Tracy–Widom margin"),
    "n_spikes": Column("spikes (eigenvalues above edge + margin)"),
    "largest_gap": Column("largest eigenvalue gap (units of sigma²)"),
    "gap_rank": Column("eigenvalue rank of the gap"),
    "effective_rank": Column("effective rank"),
    "participation_ratio": Column("participation ratio"),
    "mp_converged": Column("MP fit converged"),
    "mp_cap": Column("MP spike cap"),
    "baseline_omega_mean": Column("isotropic mean Omega"),
    "baseline_omega_std": Column("isotropic SD of Omega"),
    "baseline_effective_rank": Column("isotropic effective rank"),
    "baseline_participation_ratio": Column("isotropic participation ratio"),
    # -- the Design page (simulated studies; power: share of studies that reject)
    "true_alpha": Column("true alpha"),
    "true_delta": Column("true delta alpha"),
    "power": Column("H1 power (t-test)"),
    "power_low": Column("power band low"),
    "power_high": Column("power band high"),
    "power_size_adjusted": Column("H1 power, size-adjusted"),
    "size_adjusted_low": Column("size-adjusted band low"),
    "size_adjusted_high": Column("size-adjusted band high"),
    "majority": Column("studies with most core layers' alpha > 0"),
    "mean_fitted_alpha": Column("mean fitted alpha"),
    "wilcoxon": Column("E6 power (Wilcoxon)"),
    "wilcoxon_low": Column("Wilcoxon band low"),
    "wilcoxon_high": Column("Wilcoxon band high"),
    "wilcoxon_size_adjusted": Column("E6 power (Wilcoxon), size-adjusted"),
    "bootstrap_layers": Column("mean share of core layers whose bootstrap CI excludes 0"),
    "bootstrap_layers_low": Column("share of layers band low"),
    "bootstrap_layers_high": Column("share of layers band high"),
    "bootstrap_majority": Column("studies where most core layers' CI excludes 0"),
    "bootstrap_majority_low": Column("bootstrap majority band low"),
    "bootstrap_majority_high": Column("bootstrap majority band high"),
    "factor": Column("what grows"),
    "n_carriers": Column("carriers"),
    "half_width": Column("95% CI half-width of alpha"),
    "half_width_low": Column("half-width band low"),
    "half_width_high": Column("half-width band high"),
    "h1_power": Column("H1 power at the design's alpha"),
    "h1_size": Column("H1 rejection rate at alpha = 0 (real size)"),
    "h1_power_size_adjusted": Column("H1 power, size-adjusted"),
    "e6_wilcoxon_power": Column("E6 Wilcoxon power at the design's delta"),
    "e6_wilcoxon_size": Column("E6 Wilcoxon rejection rate at delta = 0"),
    "e6_bootstrap_layer_power": Column("E6 mean share of core layers whose bootstrap CI excludes 0"),
    "ci_half_width": Column("95% CI half-width of a layer's alpha"),
    "minimal_alpha_nominal": Column("minimal detectable alpha"),
    "minimal_alpha_nominal_low": Column("minimal detectable alpha, band low"),
    "minimal_alpha_nominal_high": Column("minimal detectable alpha, band high"),
    "minimal_alpha_size_adjusted": Column("minimal detectable alpha, size-adjusted"),
    "minimal_alpha_size_adjusted_low": Column("minimal detectable alpha, size-adjusted, band low"),
    "minimal_alpha_size_adjusted_high": Column("minimal detectable alpha, size-adjusted, band high"),
    # -- behaviour: the psychometric fits of number comparisons (presentation/behaviour_figures.fits_table)
    "reference": Column("reference number"),
    "mu": Column("mu (location on ln ratio)"),
    "sigma": Column("sigma (spread on ln ratio)"),
    "lapse": Column("lapse rate"),
    "behaviour_wf": Column("Weber fraction (ratio at 75% correct − 1)"),
    "behaviour_wf_low": Column("Weber fraction, CI low"),
    "behaviour_wf_high": Column("Weber fraction, CI high"),
    "placement": Column("threshold against the tested ratios"),
    "n_trials": Column("measured trials"),
    # -- steering along the magnitude direction (presentation/steering_figures.layers_table)
    "specificity": Column("specificity (magnitude / random mean |Δp|)"),
    "specificity_low": Column("specificity, CI low"),
    "specificity_high": Column("specificity, CI high"),
    "share_above_random": _share("prompts above the random null"),
    "relevant": Column("functionally relevant (share ≥ relevance share)"),
    "magnitude_effect": Column("mean |Δp(correct)|, magnitude direction"),
    "random_percentile": Column("random directions' percentile of mean |Δp|"),
    "baseline_correct": Column("unpatched p(correct)"),
    "option_mass": Column("answer options' probability, pushed / unpatched"),
    "dose_unit": Column("dose unit (projection span)"),
    "top_dimension_share": _share("direction's weight on its 3 largest coordinates"),
}
"""Every column of the tables the app shows, the CSVs it hands out and the report: its label, unit
and kind (p-value, share). A column's name stays its machine name in the store, the JSON and the
CLI; a reader sees :func:`column_label`. A table builder whose column would mean something else
under a name listed here renames it (the probes' ridge ``alpha`` is ``ridge_alpha``)."""

COLUMN_LABELS = {name: column.header for name, column in COLUMNS.items()}
"""Readable headers (with units) of the columns of :data:`COLUMNS`, by column name."""

P_FORMAT = "%.2e"
"""printf format of a p-value column in the app's tables: always scientific notation."""


WIDE_FORMAT = "%.3g"
"""printf format of a float column whose values span many decades (an Akaike weight of 1e-33 beside
0.36): three significant digits, in scientific notation where needed, where a fixed format wrote
"0.000000000..." and the cell cut it."""


def needs_wide_format(values: Any) -> bool:
    """Whether a column of floats holds a value a table's fixed format cannot show in a cell: a
    nonzero value under 1e-4 or one of 1e7 or more in magnitude."""
    import numpy as np  # formatting is imported where numpy is not yet

    numbers = np.asarray(values, dtype=np.float64)
    numbers = np.abs(numbers[np.isfinite(numbers) & (numbers != 0)])
    return bool(numbers.size) and bool((numbers < 1e-4).any() or (numbers >= 1e7).any())


def column_label(name: Any) -> str:
    """The header a reader sees for column ``name``: its label and unit from :data:`COLUMNS`
    (underscores become spaces for a column not listed there)."""
    text = str(name)
    return COLUMN_LABELS.get(text, text.replace("_", " "))


def csv_column_label(name: Any) -> str:
    """The header of column ``name`` in a CSV download: :func:`column_label`, but a share, which a
    CSV keeps as its value between 0 and 1, is headed "(0 to 1)" rather than "(%)"."""
    column = COLUMNS.get(str(name))
    if column is not None and column.kind == SHARE:
        return f"{column.label} (0 to 1)"
    return column_label(name)


def is_labelled(name: Any) -> bool:
    """Whether column ``name`` has its own entry in :data:`COLUMNS` (a shown column must)."""
    return str(name) in COLUMNS


def is_p_column(name: Any) -> bool:
    """Whether column ``name`` holds p-values: its kind in :data:`COLUMNS`, or for a column not
    listed there its name (``p``, ``h1_p``, ``p_value``)."""
    text = str(name)
    if text in COLUMNS:
        return COLUMNS[text].kind == P_VALUE
    return text == "p" or text.endswith("_p") or text.startswith("p_")


def is_share_column(name: Any) -> bool:
    """Whether column ``name`` holds shares between 0 and 1, shown as percentages."""
    column = COLUMNS.get(str(name))
    return column is not None and column.kind == SHARE


def format_share(value: Any) -> str:
    """A share between 0 and 1 as a percentage with one decimal ("12.5%"; :data:`MISSING` when none)."""
    number = None if value is None else float(value)
    if number is None or not math.isfinite(number):
        return MISSING
    return f"{100 * number:.1f}%"

