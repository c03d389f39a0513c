"""L-BFGS with torch's algorithm step for step: the two-loop recursion over a limited history
of curvature pairs, the scaled first step, and the optional strong-Wolfe line search
(torch/optim/lbfgs.py, ported from minFunc and torch7's lbfgs.lua / lswolfe.lua).

The scalars torch keeps as 0-d tensors (directional derivatives, step sizes, 1 / y.s) stay
0-d tensors here too, so their dtype and rounding follow the parameters' as in torch."""
from ..autograd import enable_grad, no_grad
from ..functions.elementwise import mul
from ..functions.joining import cat
from ..tensor import zeros
from ._checks import check_lr, to_scalar
from .optimizer import Optimizer

__all__ = ["LBFGS"]

# what one step hands the next, in the order torch writes it into the state
_CARRIED = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss")


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2,
    clamped to `bounds` (default: between x1 and x2); their midpoint when the cubic has no
    minimum (torch7's polyinterp)."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = d2_square.sqrt()
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _keep_off_the_ends(t, bracket, insuf_progress):
    """t moved to 10% of the bracket's width inside it when it lies that close to an end and
    the previous trial did too (or t is outside): interpolation that keeps landing at an end
    would shrink the bracket too slowly. Returns (t, insuf_progress)."""
    high, low = max(bracket), min(bracket)
    eps = 0.1 * (high - low)
    if not min(high - t, t - low) < eps:
        return t, False
    if not (insuf_progress or t >= high or t <= low):
        return t, True
    return (high - eps if abs(t - high) < abs(t - low) else low + eps), False


class _StrongWolfe:
    """torch's _strong_wolfe: a step t along d from x satisfying the strong Wolfe conditions,
    found by bracketing then zooming with cubic interpolation. A trial point is the tuple
    (t, loss, flat gradient, directional derivative)."""

    def __init__(self, obj_func, x, d, f, gtd, c1, c2, tolerance_change, max_ls):
        self.obj_func, self.x, self.d = obj_func, x, d
        self.f, self.gtd = f, gtd
        self.c1, self.c2 = c1, c2
        self.tolerance_change, self.max_ls = tolerance_change, max_ls
        self.d_norm = d.abs().max()
        self.evals = 0

    def evaluate(self, t):
        f_new, g_new = self.obj_func(self.x, t, self.d)
        self.evals += 1
        return t, f_new, g_new, g_new.dot(self.d)

    def armijo_fails(self, t, f_new):
        """Not a sufficient decrease from the starting point."""
        return f_new > (self.f + self.c1 * t * self.gtd)

    def curvature_holds(self, gtd_new):
        return abs(gtd_new) <= -self.c2 * self.gtd

    def bracket(self, t, g):
        """Extrapolate until [t_prev, t] holds a point satisfying the conditions or t does.
        Returns (bracket, done, trials beyond the first)."""
        prev = (0, self.f, g, self.gtd)
        point = self.evaluate(t)
        ls_iter = 0
        while ls_iter < self.max_ls:
            t, f_new, _, gtd_new = point
            if self.armijo_fails(t, f_new) or (ls_iter > 1 and f_new >= prev[1]):
                return [prev, point], False, ls_iter
            if self.curvature_holds(gtd_new):
                return [point], True, ls_iter
            if gtd_new >= 0:
                return [prev, point], False, ls_iter
            t_next = _cubic_interpolate(prev[0], prev[1], prev[3], t, f_new, gtd_new,
                                        bounds=(t + 0.01 * (t - prev[0]), t * 10))
            prev, point = point, self.evaluate(t_next)
            ls_iter += 1
        return [(0, self.f, g, self.gtd), point], False, ls_iter

    def zoom(self, bracket, done, ls_iter):
        """Shrink the bracket around a point satisfying the conditions; the lowest point."""
        insuf_progress = False
        low, high = _low_high(bracket)
        while not done and ls_iter < self.max_ls:
            (t0, f0, _, gtd0), (t1, f1, _, gtd1) = bracket
            if abs(t1 - t0) * self.d_norm < self.tolerance_change:
                break
            t = _cubic_interpolate(t0, f0, gtd0, t1, f1, gtd1)
            t, insuf_progress = _keep_off_the_ends(t, [t0, t1], insuf_progress)
            point = self.evaluate(t)
            ls_iter += 1
            _, f_new, _, gtd_new = point
            if self.armijo_fails(t, f_new) or f_new >= bracket[low][1]:
                bracket[high] = point
                low, high = _low_high(bracket)
                continue
            if self.curvature_holds(gtd_new):
                done = True
            elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]     # the old low becomes the high end
            bracket[low] = point
        return bracket[low]


def _low_high(bracket):
    """Positions of the bracket's lower- and higher-loss ends."""
    return (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """(loss, flat gradient, t, evaluations) at the step found (torch's signature)."""
    search = _StrongWolfe(obj_func, x, d, f, gtd, c1, c2, tolerance_change, max_ls)
    t, f_new, g_new, _ = search.zoom(*search.bracket(t, g))
    return f_new, g_new, t, search.evals


def _two_loop(flat_grad, old_dirs, old_stps, ro, H_diag, al):
    """The quasi-Newton direction -H g: L-BFGS's two-loop recursion over the stored pairs
    (y = old_dirs, s = old_stps, ro = 1 / y.s) with H_diag * I as the initial inverse
    Hessian; `al` holds the first loop's coefficients (kept in the state, as torch does)."""
    q = flat_grad.neg()
    for i in range(len(old_dirs) - 1, -1, -1):
        al[i] = old_stps[i].dot(q) * ro[i]
        q.add_(old_dirs[i], alpha=-al[i])
    r = mul(q, H_diag)
    for i in range(len(old_dirs)):
        be_i = old_dirs[i].dot(r) * ro[i]
        r.add_(old_stps[i], alpha=al[i] - be_i)
    return r


def _remember(memory, y, s, history_size):
    """Store the curvature pair (y, s) unless y.s <= 1e-10 (it would break the inverse
    Hessian's positive definiteness), dropping the oldest one when the history is full, and
    rescale the initial inverse Hessian to y.s / y.y."""
    ys = y.dot(s)
    if not ys > 1e-10:
        return
    if len(memory["old_dirs"]) == history_size:
        for key in ("old_dirs", "old_stps", "ro"):
            memory[key].pop(0)
    memory["old_dirs"].append(y)
    memory["old_stps"].append(s)
    memory["ro"].append(1.0 / ys)
    memory["H_diag"] = ys / y.dot(y)


class LBFGS(Optimizer):
    """L-BFGS (torch.optim.LBFGS, after minFunc): one step runs up to max_iter quasi-Newton
    iterations, re-evaluating the closure; with line_search_fn="strong_wolfe" each iteration's
    step length comes from a strong-Wolfe line search. All parameters form one flat vector,
    so only one parameter group is supported."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {"lr": lr, "max_iter": max_iter, "max_eval": max_eval,
                    "tolerance_grad": tolerance_grad, "tolerance_change": tolerance_change,
                    "history_size": history_size, "line_search_fn": line_search_fn}
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    # -- the parameters as one flat vector --------------------------------------------------
    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(p.numel() for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        """Every parameter's gradient (zeros where it has none), flattened and concatenated.
        reshape, not torch's view: our gradients of non-contiguous parameters may be too."""
        views = [zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None
                 else p.grad.to_dense().reshape(-1) if p.grad.is_sparse      # torch's too
                 else p.grad.reshape(-1) for p in self._params]
        return cat(views, 0)

    def _add_grad(self, step_size, update):
        """params += step_size * update, `update` being a flat vector."""
        offset = 0
        for p in self._params:
            numel = p.numel()
            p.add_(update[offset:offset + numel].view_as(p), alpha=step_size)
            offset += numel
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _clone_param(self):
        return [p.clone() for p in self._params]

    def _set_param(self, params_data):
        for p, pdata in zip(self._params, params_data, strict=True):
            p.copy_(pdata)

    def _directional_evaluate(self, closure, x, t, d):
        """(loss, flat gradient) at x + t d; the parameters are put back to x."""
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    # -- step -------------------------------------------------------------------------------
    def step(self, closure):
        """Up to max_iter L-BFGS iterations; `closure` re-evaluates the model and returns the
        loss (called with gradients enabled). Returns the loss before the first iteration."""
        if len(self.param_groups) != 1:
            raise AssertionError(
                f"Expected exactly one param_group, but got {len(self.param_groups)}")
        if self.param_groups[0]["line_search_fn"] not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")

        def closure_with_grad():
            with enable_grad():
                return closure()

        with no_grad():
            return self._step(closure_with_grad, self.param_groups[0])

    def _step(self, closure, group):
        # the state is global but kept under the first parameter (as in torch), so that
        # load_state_dict casts it to the parameters' dtype and device
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= group["tolerance_grad"]:
            return orig_loss
        memory = {key: state.get(key) for key in _CARRIED}
        n_iter = 0
        while n_iter < group["max_iter"]:
            n_iter += 1
            state["n_iter"] += 1
            d = memory["d"] = self._direction(state, memory, flat_grad, group["history_size"])
            if memory["prev_flat_grad"] is None:
                memory["prev_flat_grad"] = flat_grad.clone()
            else:
                memory["prev_flat_grad"].copy_(flat_grad)
            memory["prev_loss"] = loss
            t = memory["t"] = self._initial_step(state, flat_grad, group)
            gtd = flat_grad.dot(d)
            if gtd > -group["tolerance_change"]:
                break     # the directional derivative is below tolerance
            loss, flat_grad, t, evals = self._move(closure, group, loss, flat_grad, t, d, gtd,
                                                   current_evals, n_iter)
            memory["t"] = t
            current_evals += evals
            state["func_evals"] += evals
            if self._converged(group, n_iter, current_evals, flat_grad, d, t,
                               loss, memory["prev_loss"]):
                break
        state.update(memory)
        return orig_loss

    def _direction(self, state, memory, flat_grad, history_size):
        """Steepest descent on the very first iteration, else the L-BFGS direction after
        taking the last step's curvature pair into the history."""
        if state["n_iter"] == 1:
            memory.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return flat_grad.neg()
        _remember(memory, flat_grad.sub(memory["prev_flat_grad"]),
                  memory["d"].mul(memory["t"]), history_size)
        if "al" not in state:
            state["al"] = [None] * history_size
        return _two_loop(flat_grad, memory["old_dirs"], memory["old_stps"], memory["ro"],
                         memory["H_diag"], state["al"])

    @staticmethod
    def _initial_step(state, flat_grad, group):
        """lr, scaled down on the very first iteration so that its step is at most 1 in L1
        (the steepest-descent direction has no curvature information yet)."""
        lr = to_scalar(group["lr"])
        if state["n_iter"] == 1:
            return min(1.0, 1.0 / flat_grad.abs().sum()) * lr
        return lr

    def _move(self, closure, group, loss, flat_grad, t, d, gtd, current_evals, n_iter):
        """Step along d: by the line search's t, or by t itself and re-evaluate (except on
        the last iteration: in a stochastic setting that evaluation would be wasted).
        Returns (loss, flat gradient, t, closure evaluations)."""
        if group["line_search_fn"] is not None:
            x_init = self._clone_param()

            def obj_func(x, t, d):
                return self._directional_evaluate(closure, x, t, d)

            loss, flat_grad, t, evals = _strong_wolfe(
                obj_func, x_init, t, d, loss, flat_grad, gtd,
                max_ls=group["max_eval"] - current_evals)
            self._add_grad(t, d)
            return loss, flat_grad, t, evals
        self._add_grad(t, d)
        if n_iter == group["max_iter"]:
            return loss, flat_grad, t, 0
        loss = float(closure())
        return loss, self._gather_flat_grad(), t, 1

    @staticmethod
    def _converged(group, n_iter, current_evals, flat_grad, d, t, loss, prev_loss):
        """Whether the iterations stop: out of iterations or evaluations, the gradient below
        tolerance_grad, or the step or the loss change below tolerance_change."""
        if n_iter == group["max_iter"] or current_evals >= group["max_eval"]:
            return True
        if flat_grad.abs().max() <= group["tolerance_grad"]:
            return True
        if d.mul(t).abs().max() <= group["tolerance_change"]:
            return True
        return abs(loss - prev_loss) < group["tolerance_change"]
