"""False-alarm patterns found by linting real JAX packages, and the recall gaps found at the
same time (JG101-JG104, JG109-JG112, JG301, JG601-JG604): each pattern as a minimal snippet,
next to the nearby code that must still be flagged, so that a test fails if either side
breaks. The rule classes' own `valid`/`invalid` examples hold more of them."""

from __future__ import annotations

import textwrap

import libcst as cst
from helpers import ALL_RULES, clean, codes, fix, lint

from jaxguard.lint.engine import lint_source

PURITY_AND_KEYS = ("JG101", "JG102", "JG103", "JG104", "JG601", "JG602", "JG603", "JG604")


def found(source: str, path: str = "example.py") -> list[str]:
    return [d.code for d in lint_source(clean(source), path, ALL_RULES).diagnostics]


# 1. abstract traces: eval_shape / make_jaxpr / .lower() run nothing --------------------------

IMPURE_BODY = """
import jax

scale = 1.0
seen = {{}}
result = None

def body(x):
    global result
    key = jax.random.PRNGKey(0)
    a = jax.random.normal(key, x.shape)
    b = jax.random.uniform(key, x.shape)
    seen["a"] = a
    result = a
    return x * scale + a + b

out = {transform}(body)(1.0)
scale = 2.0
"""


def test_an_abstract_trace_is_not_a_run_for_any_rule():
    abstract = [c for c in found(IMPURE_BODY.format(transform="jax.make_jaxpr")) if c in PURITY_AND_KEYS]
    assert abstract == []
    compiled = [c for c in found(IMPURE_BODY.format(transform="jax.jit")) if c in PURITY_AND_KEYS]
    assert sorted(set(compiled)) == ["JG102", "JG103", "JG104", "JG601", "JG604"]


def test_a_function_reached_from_a_real_trace_is_not_abstract():
    source = """
    import jax

    def helper(x):
        key = jax.random.PRNGKey(0)
        return x + jax.random.normal(key)

    shapes = jax.eval_shape(helper, 1.0)
    step = jax.jit(lambda x: helper(x) * 2)
    """
    assert "JG604" in found(source)


def test_lowering_and_abstract_helpers_consume_no_key():
    source = """
    import jax

    def bench(init, apply, x):
        k = jax.random.PRNGKey(42)
        params = init(k, x)
        compiled = jax.jit(apply).lower(params, k, x).compile()
        text = hk.experimental.abstract_to_dot(apply)(params, k, x)
        return compiled, text
    """
    assert "JG601" not in found(source)
    # a helper that only evaluates the init's shapes, with jax.eval_shape or a jitted
    # function's eval_shape, draws nothing from the key it is given
    helper = """
    import jax

    def shaped_state(init, rng):
        shapes = jax.eval_shape(init, rng)
        return jax.jit(init).eval_shape(rng), shapes

    def setup(init):
        rng = jax.random.PRNGKey(0)
        abstract = shaped_state(init, rng)
        return init(rng), abstract
    """
    assert "JG601" not in found(helper)
    assert "JG601" in found(helper.replace("return jax.jit(init).eval_shape(rng), shapes", "return jax.random.normal(rng), shapes"))


# 2. JG604: the `for` statement's iterable is evaluated once ------------------------------------


def test_seed_in_the_iterable_of_a_for_is_made_once():
    source = """
    import jax

    def test_clipped(dist):
        for rng in jax.random.split(jax.random.PRNGKey(42), 5):
            dist.sample(seed=rng)
        for _ in range(3):
            dist.sample(seed=jax.random.PRNGKey(42))
    """
    assert [d.line for d in lint(source) if d.code == "JG604"] == [7]


def test_a_random_function_inside_vmap_or_jit_means_the_same_for_the_key():
    # kups' key chain: `jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, i)` derives new
    # keys each iteration, as fold_in does; a vmapped sampler still draws from the same keys
    source = """
    import jax

    def chain(rng):
        keys = jax.random.split(rng, 4)

        @jax.jit
        def fold_keys(keys, i):
            return jax.vmap(jax.random.fold_in, in_axes=(0, None))(keys, i)

        for i in range(3):
            yield fold_keys(keys, i)

    def noise(rng):
        keys = jax.random.split(rng, 4)
        out = []
        for i in range(3):
            out.append(jax.vmap(jax.random.normal)(keys))
        return out
    """
    assert [(d.code, d.line) for d in lint(source) if d.code.startswith("JG60")] == [("JG603", 17)]


# 3. JG102: a table built, then frozen, before the def ---------------------------------------


def test_a_step_made_anew_on_each_call_sees_the_global_set_before_it_runs():
    # lagrangian_nns' train(): it sets the optimizer globals, then builds and runs its jitted
    # step; each call of train() makes a new step with its own compile cache
    source = """
    import jax

    opt_update = None

    def train(n, lr):
        global opt_update

        @jax.jit
        def step(x):
            return opt_update(x)

        opt_update = make(lr)
        for _ in range(n):
            x = step(1.0)
        return x
    """
    assert "JG102" not in codes(source)
    # set again after the step ran: the compiled step keeps the first optimizer
    stale = source.replace("        return x\n", "        opt_update = make(lr / 10)\n        return step(x)\n")
    assert [d.line for d in lint(stale) if d.code == "JG102"] == [10]



def test_module_table_frozen_before_the_first_call_but_not_after():
    before = """
    import jax
    import numpy as np
    import jax.numpy as jnp

    MOVES = np.zeros(8)
    MOVES[3] = 1
    MOVES = jnp.asarray(MOVES)

    @jax.jit
    def legal(i):
        return MOVES[i]
    """
    rebuilt = textwrap.dedent(before) + "MOVES = MOVES * 2\n"  # after the def, before any call
    after = textwrap.dedent(before) + "legal(0)\nMOVES = MOVES * 2\n"
    assert "JG102" not in found(before)
    assert "JG102" not in found(rebuilt)
    assert "JG102" in found(after)


# 4. JG104 / JG301: containers made per call, functional APIs, dict parameters ------------------


def test_string_key_on_a_traced_argument_is_a_dict_item_not_an_array_item():
    source = """
    import jax

    @jax.jit
    def update(params_, grads):
        params_["online"] = params_["online"] - grads
        return params_
    """
    assert found(source) == []
    not_returned = source.replace("return params_", "return grads")
    assert found(not_returned) == ["JG104"]


def test_nested_array_item_is_flagged_and_its_fix_is_unsafe():
    source = """
    import jax.numpy as jnp

    params = [{"w": jnp.ones((2, 2))}]
    params[0]["w"][0, 0] = 0.0
    """
    (diagnostic,) = [d for d in lint(source) if d.code == "JG301"]
    assert not diagnostic.fix.safe
    assert fix(source) == clean(source)  # safe fixes only: unchanged
    fixed = fix(source, unsafe=True)
    assert "params[0][\"w\"] = params[0][\"w\"].at[0, 0].set(0.0)" in fixed
    cst.parse_module(fixed)
    assert "JG301" not in codes(fixed)


# 6. JG101: static information printed at trace time ------------------------------------------


def test_static_print_is_silent_and_never_rewritten():
    source = """
    import jax

    @jax.jit
    def f(x):
        print(f"tracing f: {x.shape} {x.dtype}", jax.typeof(x))
        return x
    """
    assert "JG101" not in found(source)
    assert fix(source, unsafe=True) == clean(source)


def test_a_message_alone_is_silent_but_a_traced_value_beside_it_is_a_print_in_jit():
    message = """
    import jax

    @jax.jit
    def f(x):
        print("Executing function")
        return x
    """
    traced = message.replace('print("Executing function")', 'print("Executing function", f"{x.shape}: {x}")')
    assert "JG101" not in found(message)
    assert "JG101" in found(traced)


# 7. JG109 / JG112: retrace only for a new function object ------------------------------------

PER_CALL = """
import jax

def evaluate(model, x):
    return jax.jit(lambda v: model(v) * 2)(x)
"""


def test_jit_per_call_is_opt_in_and_silent_in_test_modules():
    assert "JG112" in found(PER_CALL)
    assert "JG112" not in found(PER_CALL, path="tests/test_model.py")
    assert "JG112" not in found(PER_CALL, path="model_test.py")
    from helpers import codes as default_codes  # noqa: F401 (documents: helpers select every rule)
    from jaxguard.lint.engine import LintSettings
    from jaxguard.lint.registry import all_rules

    default = LintSettings(frozenset(code for code, rule in all_rules().items() if rule.default_on))
    assert not [d for d in lint_source(clean(PER_CALL), "model.py", default).diagnostics if d.code in ("JG109", "JG112")]


def test_jit_of_a_module_function_in_a_loop_is_slow_dispatch_not_a_retrace():
    source = """
    import jax

    def step(x):
        return x + 1

    def run(x, n):
        for _ in range(n):
            x = jax.jit(step)(x)
            x = jax.jit(lambda v: v * 2)(x)
        return x
    """
    stable, fresh = sorted((d for d in lint(source) if d.code == "JG109"), key=lambda d: d.column)
    assert "no retrace" in stable.message and "recompiles" not in stable.message
    assert "a lambda" in fresh.message and "retraces and recompiles" in fresh.message


# 8. JG601-JG603: what a callee does with the key it is given ----------------------------------


def test_a_method_that_re_derives_its_key_with_fold_in():
    source = """
    import jax

    class Trainer:
        def train_step(self, state, key):
            key = jax.random.fold_in(key, state.step)
            return state.apply(jax.random.normal(key))

        def train(self, state, batches):
            key = jax.random.key(0)
            for _ in batches:
                state = self.train_step(state, key)
            return state
    """
    assert "JG603" not in found(source)
    drawing = source.replace("key = jax.random.fold_in(key, state.step)\n", "")
    assert "JG603" in found(textwrap.dedent(drawing))


def test_a_callee_that_keeps_the_key_consumes_it():
    source = """
    import jax

    def make_state(params, key):
        state = {}
        state["rng"] = key
        return state

    def init(params):
        key = jax.random.key(0)
        a = make_state(params, key)
        b = make_state(params, key)
        return a, b
    """
    assert "JG601" in found(source)


HAIKU_APPLY = """
import functools
import haiku as hk
import jax

def check(x):
    rng = jax.random.PRNGKey(42)
    f = hk.transform(lambda x: hk.Linear(3)(x))
    params = f.init(rng, x)
    out = f.apply(params, rng, x)
    jitted = jax.jit(f.apply)(params, rng, x)
    apply_fn = functools.partial(f.apply, params)
    again = jax.jit(apply_fn)(rng, x)
    return out, jitted, again
"""


def test_a_key_handed_to_haiku_apply_is_no_reuse_as_the_model_may_draw_nothing():
    # Haiku's apply takes the key whether or not the model has dropout; init then apply with
    # one key is the idiom of Haiku's own documentation
    assert not [c for c in found(HAIKU_APPLY) if c.startswith("JG60")]
    # a certain draw after it is still judged against the certain one before it (init)
    drawn = HAIKU_APPLY.replace("    return out, jitted, again", "    noise = jax.random.normal(rng, x.shape)\n    return noise")
    assert found(drawn).count("JG601") == 1
    # the same key to apply in every step of a loop: the same dropout mask every step if the
    # model has dropout, nothing if it has none: a possible draw, not reported
    looped = """
    import haiku as hk
    import jax

    def train(f, params, batches):
        rng = jax.random.PRNGKey(0)
        for batch in batches:
            params = f.apply(params, rng, batch)
        return params
    """
    assert "JG603" not in found(looped)
    proven = looped.replace("params = f.apply(params, rng, batch)", "params = params + jax.random.normal(rng)")
    assert "JG603" in found(proven)
    # without Haiku, `.apply(params, key, x)` is some other library's call that takes the key
    # (a possible draw), after an `init` that certainly drew from it
    flax_like = HAIKU_APPLY.replace("import haiku as hk\n", "").replace("hk.transform(lambda x: hk.Linear(3)(x))", "make()")
    assert "JG601" in found(flax_like)


def test_a_helper_that_only_hands_its_key_to_a_models_apply_is_a_maybe_draw():
    # an actor-critic update: the critic loss draws target noise from the key, the actor
    # loss only gives it to the networks' apply (deterministic MLPs draw nothing)
    source = """
    import jax
    import haiku as hk

    class Agent:
        def _critic_loss(self, params, key, obs):
            noise = jax.random.normal(key, obs.shape)
            return self._critic.apply(params, key, obs + noise).mean()

        def _actor_loss(self, params, key, obs):
            return -self._critic.apply(params, key, obs, self._actor.apply(params, key, obs)).mean()

        def update(self, params, key, obs):
            critic = self._critic_loss(params, key, obs)
            actor = self._actor_loss(params, key, obs)
            return critic, actor
    """
    assert "JG601" not in found(source)
    # a helper whose body certainly draws from the key is a draw at its call
    drawing = source.replace("return -self._critic.apply(", "return jax.random.uniform(key) - self._critic.apply(")
    assert found(drawing).count("JG601") == 1


def test_a_draw_under_a_flag_is_no_reuse_on_a_path_the_flag_rules_out():
    # the draw happens only when a trace is asked for; the path that reuses the key is the
    # one where neither was (both `if`s returned before it)
    source = """
    import jax

    class Sampler:
        def run(self, key, state):
            if self.return_trace or self.return_info:
                key_smc, key_init = jax.random.split(key)
            if self.return_trace:
                return self.loop(key_smc, state)
            if self.return_info:
                return self.loop(key_smc, state)
            else:
                return jax.random.normal(key, state.shape)
    """
    assert "JG602" not in found(source) and "JG601" not in found(source)
    # ... and likewise a parameter that is never rebound
    bootstrap = """
    import jax

    def tarp(key, x, bootstrap):
        if not bootstrap:
            refs = jax.random.uniform(key, x.shape)
            return refs
        return jax.random.normal(key, x.shape)
    """
    assert "JG601" not in found(bootstrap)
    # the same flag rebound between the two: nothing is ruled out
    rebound = bootstrap.replace("        return refs\n", "        bootstrap = refs.sum() > 0\n")
    assert "JG601" in found(rebound)
    # a path where the flag's draw did happen is still reported
    both = source.replace("            else:\n                return jax.random.normal(key, state.shape)",
                          "            return jax.random.normal(key, state.shape)").replace(
        "            if self.return_trace:\n                return self.loop(key_smc, state)\n", "")
    assert "JG602" in found(both)
    # a mode compared with two different literals: at most one branch draws
    modes = """
    import jax

    def add_noise(x, key, noise_type):
        if noise_type == "uniform":
            x = x + jax.random.uniform(key, x.shape)
        if noise_type == 'gaussian':
            x = x + jax.random.normal(key, x.shape)
        return x
    """
    assert "JG601" not in found(modes)
    assert "JG601" in found(modes.replace("if noise_type == 'gaussian':", "if noise_type != 'gaussian':"))


def test_draws_whose_numbers_are_never_used_are_no_reuse():
    # samples taken only as templates for empty buffers: their shapes and dtypes are read,
    # their numbers never, so drawing them from one key correlates nothing
    source = """
    import jax
    import jax.numpy as jnp

    def buffers(obs_space, action_space, n):
        dummy = jax.random.PRNGKey(0)
        empty_obs = jax.tree_util.tree_map(lambda x: jnp.empty((n,) + x.shape, x.dtype), obs_space.sample(dummy))
        action = action_space.sample(dummy)
        empty_action = jnp.empty((n,) + action.shape, action.dtype)
        noise = jax.random.normal(dummy, (n,))
        return empty_obs, empty_action, noise
    """
    assert "JG601" not in found(source)
    # the action's numbers used: a reuse of the key that made the noise
    used = source.replace("return empty_obs, empty_action, noise", "return empty_obs, empty_action + action, noise")
    assert "JG601" in found(used)
    # `jax.jax.tree_util`: jax under its own name, as older releases exported it
    assert "JG601" not in found(source.replace("jax.tree_util.tree_map", "jax.jax.tree_util.tree_map"))


def test_dummy_inputs_of_a_model_init_are_shape_templates():
    # `net.init(key, x)` runs the model on `x` only to learn its shapes: numbers drawn for
    # `x` from the key that also seeds the parameters correlate with nothing
    source = """
    import jax

    def init_agent(key, critic, actor, obs_dim, act_dim):
        dummy_obs = jax.random.normal(key, (1, obs_dim))
        dummy_action = jax.random.uniform(key, (1, act_dim))
        critic_params = critic.init(key, dummy_obs, dummy_action)
        return critic_params
    """
    assert "JG601" not in found(source)
    # the dummy numbers used as data too: reported
    assert "JG601" in found(source.replace("return critic_params", "return critic_params, dummy_obs"))
    # two networks initialised from one key start alike: reported
    two = source.replace("return critic_params", "actor_params = actor.init(key, dummy_obs)\n        return critic_params, actor_params")
    assert found(two).count("JG601") == 1


def test_an_init_with_output_whose_output_is_thrown_away_is_an_init():
    # galaxy diffusion: dummy inputs drawn from the key that seeds the parameters, the
    # forward output discarded (`_, params`): the dummies only give the shapes, and the
    # "sample" stream only feeds the discarded output
    source = """
    import jax

    def restore_target(vdm, rng):
        x_dummy = jax.random.normal(rng, (8, 3))
        conditioning_dummy = jax.random.normal(rng, (8, 2))
        _, params = vdm.init_with_output({"sample": rng, "params": rng}, x_dummy, conditioning_dummy)
        return params

    def train(vdm, batch, seed):
        rng, rng_params = jax.random.split(jax.random.PRNGKey(seed))
        _, params = vdm.init_with_output({"sample": rng, "params": rng_params}, batch)
        rng, step_rng = jax.random.split(rng)
        return params, step_rng
    """
    assert "JG601" not in found(source)
    # the forward output kept: the dummies' numbers reach it, and the sample stream feeds it
    kept = source.replace("_, params = vdm.init_with_output", "out, params = vdm.init_with_output").replace(
        "return params\n", "return out, params\n"
    )
    assert [d.line for d in lint(kept) if d.code == "JG601"] == [5, 6, 12]


def test_numbers_drawn_and_never_read_correlate_with_nothing():
    # w2ot's evaluation scripts: `X = X_sampler.sample(key)` then `Y = Y_sampler.sample(key)`,
    # and only Y is used: the first draw is dead, nothing shares its numbers
    source = """
    import jax

    def main(exp, key, n):
        X = exp.X_sampler.sample(key, n)
        Y = exp.Y_sampler.sample(key, n)
        _ = jax.random.uniform(key)
        return Y
    """
    assert "JG601" not in found(source)
    assert found(source.replace("return Y", "return X, Y")).count("JG601") == 1
    # a name another scope may read is not dead: `global`, or `locals()`
    assert "JG601" in found(source.replace("        X = exp", "        global X\n        X = exp"))
    assert "JG601" in found(source.replace("return Y", "return Y, locals()"))


def test_a_batch_axis_added_to_a_dummy_input_keeps_it_a_template():
    # evorl: one observation and one action sampled from the spaces, given a batch axis,
    # only to initialise the networks
    source = """
    import jax

    def init(critic, obs_space, action_space, key):
        key, critic_key = jax.random.split(key)
        dummy_obs = jax.tree_util.tree_map(lambda x: x[None, ...], obs_space.sample(key))
        dummy_action = action_space.sample(key)[None, ...]
        return critic.init(critic_key, dummy_obs, dummy_action)
    """
    assert "JG601" not in found(source)
    # the batched numbers used as data: the action repeats the observation's draw
    used = source.replace("return critic.init(critic_key, dummy_obs, dummy_action)", "return dummy_obs + dummy_action")
    assert "JG601" in found(used)


def test_a_state_built_only_for_an_abstract_evaluation_is_a_template():
    # dopamax: a throwaway train state from one key, read only by `jax.eval_shape` to size
    # the replay buffer; its numbers are never computed
    source = """
    import jax

    class Agent:
        def __init__(self):
            temp_key = jax.random.PRNGKey(0)
            temp = self._initial_state(temp_key, temp_key)
            self.spec = jax.eval_shape(self._rollout, temp.params, temp.key)

        def _initial_state(self, key, env_key):
            return jax.random.normal(key, (3,)), jax.random.uniform(env_key, (3,))

        def _rollout(self, params, key):
            return params
    """
    assert "JG601" not in found(source)
    # the state's numbers used: the two draws are correlated
    used = source.replace("self.spec = jax.eval_shape(self._rollout, temp.params, temp.key)", "self.state = temp")
    assert "JG601" in found(used)


def test_a_draw_under_a_test_of_a_literal_the_caller_passes_is_worked_out():
    # init2winit's fastMRI loader draws from the key only for the "train" split: loading
    # "val" and "test" with the same key draws nothing
    source = """
    import jax

    def load_split(split, rng=None):
        if split in ["train", "eval_train"]:
            return jax.random.randint(rng, (), 0, 1000)
        elif split == "test":
            return 1
        return 0

    def get(rng, which):
        return load_split("train", rng), load_split("val", rng), load_split("test", rng)
    """
    assert "JG601" not in found(source)
    # two splits that both draw, or one the linter cannot read: reported
    assert "JG601" in found(source.replace('load_split("val", rng)', 'load_split("eval_train", rng)'))
    assert "JG601" in found(source.replace('load_split("val", rng)', "load_split(which, rng)"))


def test_a_draw_only_when_an_argument_the_caller_passes_is_none_is_not_proven():
    # mahjax: the deck is prepared once from the key and handed on; the helper would draw
    # from the key only to prepare it itself, when it is not given
    source = """
    import jax

    def prepare(key):
        return jax.random.permutation(key, 136)

    def next_round(state, key, prepared=None):
        if prepared is None:
            prepared = prepare(key)
        return state, prepared

    def step(state, key):
        prepared = prepare(key)
        return next_round(state, key, prepared=prepared)
    """
    assert "JG601" not in found(source)
    # left out, or given as None: the helper draws, a reuse of the key
    assert "JG601" in found(source.replace("next_round(state, key, prepared=prepared)", "next_round(state, key)"))
    assert "JG601" in found(source.replace("next_round(state, key, prepared=prepared)", "next_round(state, key, None)"))


def test_a_module_clone_is_no_key():
    # `nnx.clone(critic)` copies a network: handing it to a step that draws from another
    # parameter, once per iteration, is no key reuse; a clone of a key is a key
    source = """
    import jax
    from flax import nnx

    def train(critic, key, n):
        critic_target = nnx.clone(critic)
        for _ in range(n):
            key, sub = jax.random.split(key)
            step(critic, critic_target, sub)
        return critic_target

    def step(critic, critic_target, sampling_key):
        return critic(jax.random.normal(sampling_key)) + critic_target(1.0)
    """
    assert not {"JG601", "JG603"} & set(found(source))
    copied = source.replace("nnx.clone(critic)", "nnx.clone(key)").replace("step(critic, critic_target, sub)", "step(critic, sub, critic_target)")
    assert "JG603" in found(copied)


def test_an_object_of_a_class_of_the_module_is_judged_by_its_method():
    # `flow = Flow()` then `flow(x, params=p, rng_key=key)`: the call runs Flow.__call__,
    # which draws only while it has no parameters (a maybe), never beside another draw
    source = """
    import jax

    class Flow:
        def __call__(self, x, params=None, rng_key=None):
            if params is None:
                params = jax.random.normal(rng_key, x.shape)
            return x * params

    def check(key, p):
        x = jax.random.normal(key, (3,))
        flow = Flow()
        return flow(x, params=p, rng_key=key)
    """
    assert "JG601" not in found(source)
    # a method that always draws: the same key drawn from twice
    drawing = source.replace("            if params is None:\n                params = jax.random.normal(rng_key, x.shape)\n",
                             "            params = jax.random.normal(rng_key, x.shape)\n")
    assert "JG601" in found(drawing)
    assert "JG601" in found(drawing.replace("return flow(x, params=p, rng_key=key)", "return flow.__call__(x, p, key)"))


def test_an_object_an_attribute_holds_is_judged_by_its_class_method():
    # NuX's flows: `self.sigmoid = Sigmoid()` in __init__, then `self.sigmoid(x, rng_key=key)`:
    # Sigmoid.__call__ swallows the key in a `**kwargs` it never reads, so nothing is drawn
    source = """
    import jax

    class Sigmoid:
        def __call__(self, x, inverse=False, **kwargs):
            return jax.nn.sigmoid(x)

    class Flow:
        def __init__(self):
            self.sigmoid = Sigmoid()

        def __call__(self, x, rng_key):
            k1, k2 = jax.random.split(rng_key)
            x = x + jax.random.normal(k1, x.shape)
            return self.sigmoid(x, rng_key=rng_key)
    """
    assert "JG602" not in found(source)
    # a layer that does draw from the key it is given: drawn from after the split
    drawing = source.replace("return jax.nn.sigmoid(x)", "return x + jax.random.normal(kwargs['rng_key'], x.shape)")
    assert "JG602" in found(drawing)  # a `**kwargs` it reads: a possible draw, beside the split
    named = source.replace("(self, x, inverse=False, **kwargs)", "(self, x, inverse=False, rng_key=None)").replace(
        "return jax.nn.sigmoid(x)", "return x + jax.random.normal(rng_key, x.shape)")
    assert "JG602" in found(named)
    # an attribute that another method rebinds to something else: not known, a possible draw
    # beside the split, as before
    rebound = source.replace("            self.sigmoid = Sigmoid()\n", "            self.sigmoid = Sigmoid()\n\n    def reset(self, f):\n        self.sigmoid = f\n")
    assert "JG602" in found(rebound)


def test_a_draw_under_one_value_of_a_local_is_not_paired_with_a_draw_under_another():
    # sbgm's get_dataset: `name = config.name.lower()`, then one `if name == "...":` per
    # dataset, each handing the key to its own loader: only one runs
    source = """
    import jax

    def get_dataset(key, config):
        name = config.name.lower()
        if name == "moons":
            data = jax.random.normal(key, (10,))
        if name == "grfs":
            data = jax.random.uniform(key, (10,))
        return data
    """
    assert "JG601" not in found(source)
    # a name the body binds again may change between the tests: both may run
    rebound = source.replace('        if name == "grfs":', '        name = "grfs"\n        if name == "grfs":')
    assert "JG601" in found(rebound)
    # two tests of different names can both hold
    other = source.replace('if name == "grfs":', 'if config.kind == "grfs":')
    assert "JG601" in found(other)


def test_one_key_for_two_reorderings_keeps_paired_arrays_aligned():
    # rigno's evaluation permutes the model's input and the ground truth with one key, so
    # they stay comparable point by point: `permutation` twice, directly or through a helper
    source = """
    import jax

    def permute(batch, key=None):
        if key is None:
            key = jax.random.PRNGKey(0)
        order = jax.random.permutation(key, batch.shape[0])
        return batch[order]

    def aligned(x, y, key):
        return permute(x, key), permute(y, key)

    def direct(x, y, key):
        return jax.random.permutation(key, x), jax.random.permutation(key, y)
    """
    assert "JG601" not in found(source)
    # a helper that also draws noise from the key (a reuse inside it): its two calls draw
    # the same noise for x and y
    noisy = source.replace("        return batch[order]", "        return batch[order] + jax.random.normal(key, batch.shape)")
    assert found(noisy).count("JG601") == 2
    # a reordering beside a draw of other numbers is still a reuse
    mixed = source.replace("jax.random.permutation(key, y)", "jax.random.normal(key, y.shape)")
    assert "JG601" in found(mixed)


def test_one_key_for_two_choices_without_replacement_selects_the_same_rows():
    # hax-em takes a batch of poses and of CTF parameters with one key: `choice(...,
    # replace=False)` is the first rows of `permutation(key, n)`, so each particle keeps
    # its pose and its defocus together
    source = """
    import jax

    def pick(key, poses, defocus, n):
        rot = jax.random.choice(key, poses, shape=(n,), replace=False)
        dfu = jax.random.choice(key, defocus, shape=(n,), replace=False)
        return rot, dfu
    """
    assert "JG601" not in found(source)
    # drawn with replacement, the second choice is not a reordering: the key is drawn from again
    assert "JG601" in found(source.replace("dfu = jax.random.choice(key, defocus, shape=(n,), replace=False)", "dfu = jax.random.choice(key, defocus, shape=(n,))"))
    # a choice without replacement beside a draw of other numbers is still a reuse
    assert "JG601" in found(source.replace("dfu = jax.random.choice(key, defocus, shape=(n,), replace=False)", "dfu = jax.random.normal(key, (n,))"))


def test_a_flax_module_tabulate_draws_nothing():
    # cleanba prints `network.tabulate(network_key, obs)`: Flax evaluates the module under
    # jax.eval_shape to list its shapes, so the key is not drawn from
    source = """
    import jax

    def setup(network, network_key, obs):
        print(network.tabulate(network_key, obs))
        return network.init(network_key, obs), jax.random.normal(network_key, obs.shape)
    """
    assert "JG601" not in found(source.replace("network.init(network_key, obs), ", ""))
    # a real initialisation beside the draw: the key is used twice
    assert "JG601" in found(source)


def test_a_helper_that_hands_its_key_to_unknown_code_is_a_possible_draw():
    # ajax-rl's init_network_carry hands its key to flax's initialize_carry, whose zero
    # carry draws nothing: as for a function of another project module, handing a key to
    # code the linter cannot read is a possible draw, paired only with a proven one
    source = """
    import jax
    import somelib

    def make_carry(key, n):
        return somelib.initialize_carry(key, (n,))

    def draw(key, n):
        return jax.random.normal(key, (n,))

    def both_unknown(key):
        return make_carry(key, 2), make_carry(key, 3)
    """
    assert "JG601" not in found(source)
    assert "JG601" in found(source + "\n    def beside_a_draw(key):\n        return make_carry(key, 2), draw(key, 3)\n")
    assert "JG601" in found(source + "\n    def both_drawn(key):\n        return draw(key, 2), draw(key, 3)\n")
    # a helper whose scan body (of the module) draws from the key it carries does draw:
    # brax's rollout after `vmap(env.reset)(rng)` with the same keys
    rollout = (
        "\n    def step(carry, _):\n        state, key = carry\n        key, sub = jax.random.split(key)\n"
        "        return (state + jax.random.normal(sub), key), None\n"
        "\n    def rollout(state, key):\n        return jax.lax.scan(step, (state, key), None, length=3)\n"
        "\n    def reset_then_roll(env, key):\n        first = somelib.reset(key)\n        return rollout(first, key)\n"
    )
    assert "JG601" in found(source + rollout)


def test_a_key_a_scan_only_carries_is_not_drawn_from():
    # the keys for the steps are split from `key`, which also rides in the carry: the body
    # passes it through untouched (or drops it), so nothing is drawn from it twice
    source = """
    import jax

    def run(key, state, n):
        def step(carry, step_key):
            state, key = carry
            state = state + jax.random.normal(step_key)
            return (state, key), None

        step_keys = jax.random.split(key, n)
        (final, _), _ = jax.lax.scan(step, (state, key), step_keys)
        return final
    """
    assert "JG602" not in found(source)
    dropped = source.replace("state, key = carry", "state, _ = carry").replace("return (state, key), None", "return (state, step_key), None")
    assert "JG602" not in found(dropped)
    # a body that splits its carried key: its first step repeats the keys split before
    drawn = source.replace("state = state + jax.random.normal(step_key)", "key, sub = jax.random.split(key)\n            state = state + jax.random.normal(sub)")
    assert "JG602" in found(drawn)
    # the carry read whole elsewhere in the body: not followed, still a use
    assert "JG602" in found(source.replace("return (state, key), None", "return (state, carry[1]), None"))
    # a while_loop and a fori_loop carry alike
    loop = """
    import jax

    def run(key, x, n):
        def body(i, carry):
            x, key = carry
            return x * 2, key

        keys = jax.random.split(key, n)
        x, _ = jax.lax.fori_loop(0, n, body, (x, key))
        return x, keys
    """
    assert "JG602" not in found(loop)
    assert "JG602" in found(loop.replace("return x * 2, key", "return x * jax.random.normal(key), key"))
    # Haiku's loops take lax's arguments: the same
    haiku = loop.replace("import jax\n", "import jax\n    import haiku as hk\n").replace("jax.lax.fori_loop", "hk.fori_loop")
    assert "JG602" not in found(haiku)
    assert "JG602" in found(haiku.replace("return x * 2, key", "return x * jax.random.normal(key), key"))


def test_a_key_a_loop_rebinds_on_every_pass_is_new_after_it():
    # after `for step in range(n)`, the old key is reused only if the loop ran zero times
    source = """
    import jax

    def run(key, base, n):
        noise = jax.random.normal(key)
        for step in range(n):
            key = jax.random.fold_in(base, step)
            key, sub = jax.random.split(key)
            noise = noise + jax.random.normal(sub)
        final = jax.random.uniform(key)
        return noise, final
    """
    assert "JG601" not in found(source)
    # rebound only on some passes: the old key may reach the draw after the loop
    sometimes = source.replace("            key = jax.random.fold_in(base, step)\n", "            if step % 2:\n                key = jax.random.fold_in(base, step)\n")
    assert "JG601" in found(sometimes)


def test_side_streams_of_a_flax_init_are_possible_draws():
    # the target network starts equal to the online one: the "params" key is drawn twice
    # (reported), the dropout key only feeds init's discarded forward pass (not reported)
    source = """
    import jax

    def build(qf, obs):
        key = jax.random.PRNGKey(0)
        qf_key, dropout_key = jax.random.split(key)
        online = qf.init({"params": qf_key, "dropout": dropout_key}, obs)
        target = qf.init({"params": qf_key, "dropout": dropout_key}, obs)
        return online, target
    """
    (finding,) = [d for d in lint(source) if d.code.startswith("JG60")]
    assert finding.code == "JG601" and "'qf_key'" in finding.message
    # a side-stream key drawn for real afterwards is still a reuse of a certain draw
    drawn = source.replace("        return online, target", "        noise = jax.random.normal(dropout_key)\n        return noise")
    assert not [d for d in lint(drawn) if "'dropout_key'" in d.message]
    sampled = drawn.replace("jax.random.normal(dropout_key)", "jax.random.normal(dropout_key) + jax.random.uniform(dropout_key)")
    assert [d for d in lint(sampled) if "'dropout_key'" in d.message]


def test_a_key_among_the_forward_arguments_of_an_init_is_a_possible_draw():
    # rejax's actor: init runs the forward pass (which samples an action from the second
    # key) and keeps only the parameters; oryx's `state.init(f)(init_key, key, x)` alike
    source = """
    import jax

    def build(actor, obs, rng):
        rng, rng_actor = jax.random.split(rng)
        return actor.init(rng_actor, obs, rng_actor)

    def chain(st, kernel_fn, key, state, init_key):
        kernel = st.init(kernel_fn, name="kernel")(init_key, key, state)
        return kernel, jax.random.split(key, 10)
    """
    assert not [d for d in lint(source) if d.code.startswith("JG60")]
    # the parameters key used twice is a reuse of a certain draw
    twice = source.replace("actor.init(rng_actor, obs, rng_actor)", "actor.init(rng_actor, obs), actor.init(rng_actor, obs)")
    assert [d.code for d in lint(twice) if d.code.startswith("JG60")] == ["JG601"]
    # dbn's `init({"params": k, "dropout": k}, rng=k, ...)`: a keyword of the forward pass,
    # not one of init's own options
    keyword = source.replace("actor.init(rng_actor, obs, rng_actor)", "actor.init({'params': rng_actor, 'dropout': rng_actor}, obs, rng=rng_actor)")
    assert not [d for d in lint(keyword) if d.code.startswith("JG60")]


def test_the_two_arms_of_a_conditional_expression_are_one_draw():
    source = """
    import jax

    def sample(key, shape, is_int):
        x = jax.random.randint(key, shape, 0, 2) if is_int else jax.random.normal(key, shape)
        return x
    """
    assert "JG601" not in found(source)
    after = source.replace("        return x", "        y = jax.random.uniform(key, shape)\n        return x, y")
    assert "JG601" in found(textwrap.dedent(after))
    both = source.replace("if is_int else jax.random.normal(key, shape)", "+ jax.random.normal(key, shape)")
    assert "JG601" in found(textwrap.dedent(both))


def test_messages_name_the_transform_that_compiles():
    source = """
    import jax

    def size(x):
        return jax.pmap(lambda v: jax.lax.psum(v, "i"), "i")(x)
    """
    (finding,) = [d for d in lint(source) if d.code == "JG112"]
    assert finding.message.startswith("jax.pmap of a lambda called straight away")


# recall gaps from the Sharp Bits' "jit with methods" ------------------------------------------

METHOD = """
import jax
import jax.numpy as jnp
from functools import partial

class CustomClass:
    def __init__(self, x: jnp.ndarray, mul: bool):
        self.x = x
        self.mul = mul

    {decorator}
    def calc(self, y):
        if self.mul:
            return self.x * y
        return y
{extra}
c = CustomClass(jnp.array(2.0), True)
c.calc(3.0)
c.mul = False
"""


def test_jit_with_methods_the_three_ways_it_goes_wrong():
    traced_self = METHOD.format(decorator="@jax.jit", extra="")
    static_self = METHOD.format(decorator="@partial(jax.jit, static_argnums=0)", extra="")
    hashed = METHOD.format(
        decorator="@partial(jax.jit, static_argnums=0)",
        extra="\n    def __hash__(self):\n        return hash((self.x, self.mul))\n",
    )
    assert "JG111" in found(traced_self)
    assert "JG102" in found(static_self) and "JG111" not in found(static_self)
    assert "JG110" in found(hashed) and "JG102" not in found(hashed)


def test_possible_draws_are_judged_against_a_certain_one():
    # evosax's compatibility check: reset (possible), init (certain), apply and step (possible)
    source = """
    import jax

    def check(env, policy, params):
        key = jax.random.key(0)
        obs, state = env.reset(key, params)
        policy_params = policy.init(key, obs)
        action = policy.apply(policy_params, obs, key)
        env.step(key, state, action, params)
    """
    assert found(source).count("JG601") == 3
    # two possible draws alone prove nothing
    alone = "import jax\ndef f(env, agent):\n    key = jax.random.key(0)\n    env.reset(key)\n    agent.act(key)\n"
    assert "JG601" not in found(alone)


def test_one_finding_per_key_and_statement():
    source = "import jax\ndef g(key):\n    return jax.random.normal(key) + jax.random.normal(key) + jax.random.normal(key)\n"
    assert found(source).count("JG601") == 1
    two_lines = "import jax\ndef g(key):\n    a = jax.random.normal(key)\n    b = jax.random.normal(key)\n    c = jax.random.normal(key)\n    return a, b, c\n"
    assert found(two_lines).count("JG601") == 2


def test_a_nested_concretization_is_one_finding():
    source = "import jax\nimport numpy as np\n@jax.jit\ndef h(x):\n    return int(np.ceil(x))\n"
    assert found(source).count("JG107") == 1


# Traced only if proven traced: array operations on a traced argument, not unknown calls ------

PROVEN = """
import jax
import jax.numpy as jnp

def _batch_variance(data):
    b_means = jnp.mean(data, axis=1)
    return jnp.var(b_means), b_means.size

@jax.jit
def step(data, model):
    batch_var, n_batches = _batch_variance(data)
    if {condition}:
        data = data + 1
    return data
"""


def test_a_value_from_array_operations_on_a_traced_argument_is_traced():
    for condition in ("jnp.sum(data) > 0", "data.mean() > 0", "batch_var > 1", "abs(data[0]) > 1",
                      "jax.vmap(jnp.sum)(data)[0] > 0"):
        assert "JG106" in found(PROVEN.format(condition=condition)), condition


def test_a_value_from_a_call_the_linter_cannot_see_is_unknown_and_silent():
    # a method or function whose result is not seen, and the static element of a returned tuple
    for condition in ("model.dofs() > 3", "tree_size(model) > 3", "not_tracing(data)", "n_batches > 1"):
        assert "JG106" not in found(PROVEN.format(condition=condition)), condition


def test_print_still_asks_for_proof_of_static_before_staying_silent():
    # JG101's silence needs proof that what is printed is static: an unknown call is not that
    source = PROVEN.format(condition="n_batches > 1").replace("    return data\n", "    print(model.dofs(data))\n    return data\n")
    assert "JG101" in found(source)


# An eager shard_map runs its body on every call, per shard: nothing is traced once ----------

SHARDED = """
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((8,), ("x",))
seen = []

def body(x):
    print("block", x)
    seen.append(x.sum())
    return x * 2

{call}
"""


def test_an_eager_shard_map_body_is_not_traced_and_one_under_jit_is():
    eager = SHARDED.format(call='out = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(jnp.arange(8.0))')
    assert not {"JG101", "JG104"} & set(found(eager))
    jitted = SHARDED.format(call='@jax.jit\ndef step(x):\n    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)')
    assert {"JG101", "JG104"} <= set(found(jitted))
    kept = SHARDED.format(call='sharded = jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))\nstep = jax.jit(sharded)')
    assert "JG101" in found(kept)  # not called at once: it may be jitted later, as here


DECORATED = """
import jax
import jax.numpy as jnp
from functools import partial
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((8,), ("x",))

@partial(jax.shard_map, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
def block(x):
    print("block", x)
    return x * 2

{call}
"""


def test_a_function_decorated_with_shard_map_is_traced_only_where_traced_code_calls_it():
    # a learning script calls it at module level: each shard prints its real values
    assert "JG101" not in found(DECORATED.format(call="out = block(jnp.arange(8.0))"))
    assert "JG101" in found(DECORATED.format(call="@jax.jit\ndef step(x):\n    return block(x) + 1"))
    assert "JG101" in found(DECORATED.format(call="step = jax.jit(block)"))


# A key drawn from inside a function mapped over a pytree: the same numbers for every leaf ----

def test_a_key_drawn_in_a_tree_mapped_lambda_is_the_same_for_every_leaf():
    noise = """
    import jax

    def perturb(params, key):
        return jax.tree.map(lambda p: p + 0.01 * jax.random.normal(key, p.shape), params)
    """
    assert "JG603" in found(noise)
    per_leaf = """
    import jax

    def perturb(params, key):
        leaves, treedef = jax.tree.flatten(params)
        keys = jax.tree.unflatten(treedef, list(jax.random.split(key, len(leaves))))
        return jax.tree.map(lambda p, k: p + jax.random.normal(k, p.shape), params, keys)
    """
    aligned = """
    import jax

    def pick(genotypes, key, p):
        # one individual: the same row of every leaf
        return jax.tree.map(lambda x: jax.random.choice(key, x, shape=(1,), p=p), genotypes)
    """
    assert "JG603" not in found(per_leaf) and "JG603" not in found(aligned)


def test_calling_a_lambda_draws_from_the_key_it_closes_over():
    twice = """
    import jax

    def sample(key):
        draw = lambda: jax.random.normal(key)
        return draw() + jax.random.uniform(key)
    """
    assert "JG601" in found(twice)
    fresh = """
    import jax

    def sample(key):
        draw = lambda k: jax.random.normal(k)
        k1, k2 = jax.random.split(key)
        return draw(k1) + jax.random.uniform(k2)
    """
    assert not {"JG601", "JG602", "JG603"} & set(found(fresh))


def test_a_memo_table_filled_at_trace_time_is_not_outer_state():
    # dftax memoizes static bucket plans from inside a traced function; the function
    # returns its lookups, so a cached call needs none of what was stored
    source = """
    import jax

    PLANS = {}

    def plan_for(shape):
        hit = PLANS.get(shape)
        if hit is not None:
            return hit
        PLANS[shape] = tuple(range(shape[0]))
        return PLANS[shape]

    @jax.jit
    def f(x):
        return x * len(plan_for(x.shape))
    """
    assert "JG104" not in found(source)
    # a traced value stored in the table: it escapes the trace
    leaked = """
    import jax

    LAST = {}

    @jax.jit
    def f(x):
        if "x" in LAST:
            return LAST["x"]
        LAST["x"] = x * 2
        return x
    """
    assert "JG104" in found(leaked)
    # filled but never returned from: a table the trace writes once, not a memo
    assert "JG104" in found(source.replace("return hit", "return shape").replace("return PLANS[shape]", "return shape"))


def test_a_draw_made_only_to_wait_for_the_device_draws_nothing_anyone_reads():
    # dbn ends each epoch with `jax.random.normal(rng, ()).block_until_ready()` on a key it
    # split before: a sync barrier whose number is thrown away
    source = """
    import jax

    def epoch(rng, run):
        train_rng, valid_rng = jax.random.split(rng)
        loss = run(jax.random.normal(train_rng, (3,)), valid_rng)
        jax.random.normal(rng, ()).block_until_ready()
        return loss
    """
    found_codes = [d.code for d in lint(source) if d.code.startswith("JG60")]
    assert found_codes == []
    # the number kept and returned is a use of the split key
    kept = source.replace("        jax.random.normal(rng, ()).block_until_ready()\n        return loss", "        wait = jax.random.normal(rng, ()).block_until_ready()\n        return loss, wait")
    assert [d.code for d in lint(kept) if d.code.startswith("JG60")] == ["JG602"]


def test_a_flax_train_state_keeps_the_key_it_is_made_with():
    # dbn stores its init key in its TrainState (`rng: Any`), as Flax's dropout guide does:
    # `create` keeps the extra fields, it draws nothing
    source = """
    import jax
    from typing import Any
    from flax.training import train_state

    class TrainState(train_state.TrainState):
        rng: Any

    def initialize_model(key, model, x):
        return model.init({"params": key}, x)

    def setup(model, tx, x, rng):
        init_rng, rng = jax.random.split(rng)
        variables = initialize_model(init_rng, model, x)
        return TrainState.create(apply_fn=model.apply, params=variables["params"], tx=tx, rng=init_rng)
    """
    assert not [d for d in lint(source) if d.code.startswith("JG60")]
    # the same factory of a class the linter cannot read may draw from the key
    other = source.replace("class TrainState(train_state.TrainState):", "class TrainState(Base):")
    assert [d.code for d in lint(other) if d.code.startswith("JG60")] == ["JG601"]
