"""The folds of the two schemes and the ridge fit inside each (penalty by GCV, one-SE rule)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge, RidgeCV

from magdash.probes.crossval import (
    carrier_groups,
    cross_validate,
    fit_ridge,
    magnitude_fold_of,
    magnitude_groups,
    one_standard_error_alphas,
    splits,
)

ALPHAS = 10.0 ** np.arange(-3, 6)


def test_leave_one_carrier_out_tests_each_carrier_once_and_never_trains_on_it():
    magnitudes = np.arange(1.0, 8.0)
    folds = splits("carrier", magnitudes, 4, magnitude_folds=3, carrier_folds=0)
    carriers = carrier_groups(7, 4)
    assert len(folds) == 4
    for train, test in folds:
        assert len(set(carriers[test])) == 1 and carriers[test][0] not in set(carriers[train])
        assert test.size == 7 and train.size == 21
    assert sorted(carriers[np.concatenate([test for _, test in folds])].tolist()) == sorted(carriers.tolist())


def test_carrier_folds_deal_the_carriers_into_groups():
    folds = splits("carrier", np.arange(1.0, 8.0), 6, magnitude_folds=3, carrier_folds=3)
    carriers = carrier_groups(7, 6)
    tested = [sorted(set(carriers[test])) for _, test in folds]
    assert len(folds) == 3 and sorted(c for group in tested for c in group) == list(range(6))
    for (train, _), group in zip(folds, tested, strict=True):
        assert not set(carriers[train]) & set(group)


def test_held_out_magnitudes_interpolate():
    magnitudes = np.array([50.0, 1, 7, 3, 1000, 20, 2, 9, 100, 5])  # unsorted on purpose
    folds_of = magnitude_fold_of(magnitudes, 3)
    order = np.argsort(magnitudes)
    assert folds_of[order[0]] == -1 and folds_of[order[-1]] == -1
    np.testing.assert_array_equal(folds_of[order[1:-1]], np.arange(8) % 3)  # dealt in turn by rank
    folds = splits("magnitude", magnitudes, 4, magnitude_folds=3, carrier_folds=0)
    rows_magnitude = magnitude_groups(10, 4)
    assert len(folds) == 3
    for train, test in folds:
        held = set(rows_magnitude[test])
        assert not held & set(rows_magnitude[train])
        assert all(np.count_nonzero(rows_magnitude[test] == m) == 4 for m in held)  # all carriers together
        trained = magnitudes[sorted(set(rows_magnitude[train]))]
        assert all(trained.min() < magnitudes[m] < trained.max() for m in held)
    tested = np.concatenate([test for _, test in folds])
    assert set(rows_magnitude[tested]) == set(order[1:-1])


def test_the_one_standard_error_rule_by_hand():
    # Two groups of two rows; column 0: mean errors [1.0, 1.1, 2.0] with SE 0.5 at the minimum ->
    # the second penalty; column 1: a sharp minimum -> the minimum itself.
    errors = np.zeros((4, 2, 3))
    errors[:, 0] = [[0.5, 0.6, 1.5], [0.5, 0.6, 1.5], [1.5, 1.6, 2.5], [1.5, 1.6, 2.5]]
    errors[:, 1] = [[3.0, 1.0, 3.0], [3.0, 1.0, 3.0], [3.0, 1.0, 3.0], [3.0, 1.0, 3.0]]
    groups = np.array([7, 7, 9, 9])
    # column 0: group means 0.5/1.5 -> mean 1.0, SD 0.707, SE 0.5: limit 1.5, alphas 0 and 1 qualify.
    np.testing.assert_array_equal(one_standard_error_alphas(errors, groups, np.array([0.1, 1.0, 10.0])), [1.0, 1.0])
    errors[:, 0, 1] += 1.0  # now only the first penalty lies within one SE
    np.testing.assert_array_equal(one_standard_error_alphas(errors, groups, np.array([0.1, 1.0, 10.0])), [0.1, 1.0])


def planted(n_magnitudes=40, n_carriers=5, dim=12, seed=0):
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n_magnitudes * n_carriers, dim))
    labels = features @ rng.standard_normal((dim, 2)) + rng.normal(0, 0.5, (n_magnitudes * n_carriers, 2))
    return features, labels, magnitude_groups(n_magnitudes, n_carriers)


def test_a_fold_fit_is_ridge_with_the_penalty_gcv_and_the_rule_chose():
    features, labels, groups = planted()
    fit = fit_ridge(features, labels, groups, ALPHAS, 4096, np.random.default_rng(0))
    search = RidgeCV(alphas=ALPHAS, alpha_per_target=True, store_cv_results=True).fit(features, labels)
    np.testing.assert_array_equal(fit.alpha, one_standard_error_alphas(search.cv_results_, groups, ALPHAS))
    assert (fit.alpha >= search.alpha_).all()  # the rule never picks a weaker penalty than GCV's minimum
    direct = Ridge(alpha=fit.alpha).fit(features, labels)
    np.testing.assert_allclose(fit.predict(features[:7]), direct.predict(features[:7]), rtol=1e-10)


def test_a_large_fold_chooses_on_a_subsample_and_fits_on_every_row():
    features, labels, groups = planted(n_magnitudes=200)
    fit = fit_ridge(features, labels, groups, ALPHAS, 100, np.random.default_rng(3))
    rows = np.random.default_rng(3).choice(features.shape[0], 100, replace=False)
    search = RidgeCV(alphas=ALPHAS, alpha_per_target=True, store_cv_results=True).fit(features[rows], labels[rows])
    np.testing.assert_array_equal(fit.alpha, one_standard_error_alphas(search.cv_results_, groups[rows], ALPHAS))
    direct = Ridge(alpha=fit.alpha).fit(features, labels)
    np.testing.assert_allclose(fit.coef, direct.coef_, rtol=1e-10)


def test_cross_validate_predicts_every_tested_row_once():
    features, labels, groups = planted(n_magnitudes=12, n_carriers=4)
    magnitudes = np.arange(1.0, 13.0)
    folds = splits("magnitude", magnitudes, 4, magnitude_folds=3, carrier_folds=0)
    cv = cross_validate(features, labels, groups, folds, ALPHAS, 4096, np.random.default_rng(0))
    tested = np.isfinite(cv.predictions).all(axis=1)
    assert tested.sum() == 10 * 4 and not tested[groups == 0].any() and not tested[groups == 11].any()
    assert cv.alphas.shape == (3, 2)
    train, test = folds[1]
    own = fit_ridge(features[train], labels[train], groups[train], ALPHAS, 4096, np.random.default_rng(0))
    np.testing.assert_allclose(cv.predictions[test], own.predict(features[test]), rtol=1e-12)


@pytest.mark.parametrize("scheme", ["carrier", "magnitude"])
def test_folds_are_the_same_whatever_order_the_magnitudes_come_in(scheme):
    magnitudes = np.array([3.0, 1, 4, 15, 9, 2, 6, 5])
    order = np.argsort(magnitudes)
    first = splits(scheme, magnitudes, 3, magnitude_folds=2, carrier_folds=0)
    second = splits(scheme, magnitudes[order], 3, magnitude_folds=2, carrier_folds=0)
    rows = magnitude_groups(8, 3)

    def tested_magnitudes(folds, values):
        return sorted(tuple(sorted(set(values[rows[test]]))) for _, test in folds)

    assert tested_magnitudes(first, magnitudes) == tested_magnitudes(second, magnitudes[order])
