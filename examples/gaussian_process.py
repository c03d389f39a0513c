"""Gaussian-process regression, written the way one would in PyTorch: an RBF kernel whose
length scale, signal and noise variances are fitted by maximising the log marginal likelihood
with L-BFGS, then the posterior mean and variance at new points. Runs on mt.linalg's Cholesky
and triangular solves (our own kernels, CPU or GPU).

    python examples/gaussian_process.py [--device cuda]
"""
import argparse
import math

import minitorch as mt


def rbf(a, b, log_length, log_signal):
    """signal² · exp(-|a - b|² / (2 length²)) for every pair of rows of a and b."""
    scaled_a, scaled_b = a / log_length.exp(), b / log_length.exp()
    squared = mt.cdist(scaled_a, scaled_b) ** 2
    return (2 * log_signal).exp() * (-0.5 * squared).exp()


class GaussianProcess(mt.nn.Module):
    def __init__(self):
        super().__init__()
        self.log_length = mt.nn.Parameter(mt.tensor(0.0, dtype=mt.float64))
        self.log_signal = mt.nn.Parameter(mt.tensor(0.0, dtype=mt.float64))
        self.log_noise = mt.nn.Parameter(mt.tensor(-1.0, dtype=mt.float64))

    def covariance(self, x):
        noise = (2 * self.log_noise).exp() * mt.eye(len(x), dtype=x.dtype, device=x.device)
        return rbf(x, x, self.log_length, self.log_signal) + noise

    def negative_log_likelihood(self, x, y):
        """-log N(y; 0, K) = ½ yᵀK⁻¹y + ½ log|K| + n/2 log 2π, through K's Cholesky factor."""
        factor = mt.linalg.cholesky(self.covariance(x))
        alpha = mt.cholesky_solve(y.unsqueeze(1), factor).squeeze(1)
        log_det = 2 * factor.diagonal().log().sum()
        return 0.5 * (y @ alpha) + 0.5 * log_det + 0.5 * len(x) * math.log(2 * math.pi)

    def predict(self, x, y, x_new):
        """Posterior mean and variance at x_new given the observations (x, y)."""
        factor = mt.linalg.cholesky(self.covariance(x))
        cross = rbf(x, x_new, self.log_length, self.log_signal)
        alpha = mt.cholesky_solve(y.unsqueeze(1), factor).squeeze(1)
        v = mt.linalg.solve_triangular(factor, cross, upper=False)
        prior = (2 * self.log_signal).exp()
        return cross.T @ alpha, prior - (v * v).sum(0)


def noisy_sine(n, device, seed=0):
    mt.manual_seed(seed)
    x = mt.rand(n, 1, dtype=mt.float64) * 6 - 3
    y = (2 * x[:, 0]).sin() + 0.1 * mt.randn(n, dtype=mt.float64)
    return x.to(device), y.to(device)


def main(device="cpu", n=40, steps=20):
    x, y = noisy_sine(n, device)
    model = GaussianProcess().to(device)
    optimizer = mt.optim.LBFGS(model.parameters(), max_iter=steps,
                               line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = model.negative_log_likelihood(x, y)
        loss.backward()
        return loss

    start = closure().item()
    optimizer.step(closure)
    with mt.no_grad():
        final = model.negative_log_likelihood(x, y).item()
        x_new = mt.linspace(-2.5, 2.5, 50, dtype=mt.float64, device=device).unsqueeze(1)
        mean, variance = model.predict(x, y, x_new)
        error = (mean - (2 * x_new[:, 0]).sin()).abs().max().item()
    print(f"negative log likelihood {start:.2f} -> {final:.2f}; length scale "
          f"{model.log_length.exp().item():.3f}, noise std {model.log_noise.exp().item():.3f}; "
          f"largest error of the posterior mean on [-2.5, 2.5]: {error:.3f}, "
          f"largest posterior std {variance.clamp(min=0).sqrt().max().item():.3f}")
    return start, final, error


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    main(parser.parse_args().device)
