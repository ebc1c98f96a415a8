"""The step line's proximal approximation errors, from AReaL's metrics-mode stats."""

from memagent_workflow.trainer.prox_approx import approx_errors
from memagent_workflow.trainer.step_report import step_line

P = "ppo_actor/update/compute_logp/"


def test_errors_are_read_per_method_and_nothing_else():
    stats = {
        f"{P}loglinear/abs_error/avg": 0.01,
        f"{P}loglinear/abs_error/max": 0.2,
        f"{P}loglinear/importance_weight_abs_error/avg": 0.03,
        f"{P}linear/abs_error/avg": 0.02,
        f"{P}loglinear/approx_logp/avg": -1.0,  # not an error
        f"{P}prox_logp_gt/avg": -1.0,
        "ppo_actor/update/actor_loss/avg": 0.5,
    }
    assert approx_errors(stats) == {
        "loglinear": {
            "logp_abs_err": 0.01,
            "logp_abs_err_max": 0.2,
            "weight_abs_err": 0.03,
        },
        "linear": {"logp_abs_err": 0.02},
    }


def test_a_step_without_metrics_mode_reports_none():
    assert approx_errors({f"{P}prox_logp_gt/avg": -1.0}) is None
    line = step_line({f"{P}rollout/abs_error/avg": 0.5}, global_step=0, elapsed_s=1.0)
    assert line["prox_approx_error"] == {"rollout": {"logp_abs_err": 0.5}}
