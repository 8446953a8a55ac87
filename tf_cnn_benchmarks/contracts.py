"""What each part of a run must provide: every contract between parts, here.

One run is the driver (run/driver.py) calling an engine, which calls a
runtime and runs its steps through a step runner:

  driver.run(params, engine) ── engine.prepare(rc), engine.train(...)
      engine: engine_graph/engine.py (tf.compat.v1 session) or
              engine_tf2/engine.py (tf.function under a tf.distribute
              strategy); the entry points choose it from --engine.
      runtime: run/local_runtime.py (one process, either engine),
              cluster/task/runtime.py (a graph engine's cluster task) or
              cluster/task/tf2_runtime.py (a tf2 engine's); the engine
              reaches the cluster only through it.
      step runner: engine_graph/batch_group.py (session.run, N steps per
              call) or engine_tf2/train_step.py (the tf.function step); the
              step loop (run/step_loop.py) runs either, with the engine's
              step extras between steps.

The classes named above implement these protocols structurally (they do not
inherit them); tests/test_contracts.py checks each against its protocol.
"""

import dataclasses
from typing import Any, Callable, ContextManager, Dict, Optional, Protocol


@dataclasses.dataclass
class StepResult:
  """One step: its wall time, and the values it fetched ('loss', and for
  the graph engine 'top_1', 'top_5', 'summary' when asked)."""
  seconds: float
  values: Dict[str, Any]


class StepRunner(Protocol):

  def step(self, extra: Optional[Dict[str, Any]] = None) -> StepResult:
    """Runs the next step; ``extra`` ({name: fetch}) is fetched with it
    where the engine can (the graph engine's summaries)."""


class StepExtras(Protocol):
  """What an engine adds between the step loop's steps
  (engine_graph/step_extras.py; run/step_loop.NoExtras: nothing)."""

  # Do the steps fetch top-1/top-5 counts ('top_1', 'top_5')?
  with_accuracy: bool

  def timed_loop_starts(self) -> None:
    """Just before the first timed step."""

  def fetches(self, step: int) -> Optional[Dict[str, Any]]:
    """What timed step ``step`` fetches besides the loss (None: nothing)."""

  def after_step(self, step: int, values: Dict[str, Any]) -> None:
    """After timed step ``step`` and its row (summaries, checkpoints)."""

  def step_row(self, step: int, speed: float, accuracy) -> None:
    """A step row was printed (the benchmark log keeps it too)."""

  def evaluation_due(self, step: int) -> bool:
    """Does evaluation during training follow timed step ``step``?"""

  def evaluate(self, step: int) -> Any:
    """Evaluates now; an evaluation.Evaluation."""

  def evaluation_recorded(self, evaluated, images_per_sec) -> None:
    """An evaluation was printed and recorded (TensorBoard, the log)."""

  def global_step(self) -> int:
    """The global step now."""


class Runtime(Protocol):
  """How the run reaches TensorFlow: alone, or as a cluster task. What
  either engine needs; each engine's own part is below."""

  # Does this process write checkpoints (the only task, or the chief)?
  is_chief: bool

  def begin(self, rc, run_watch) -> Any:
    """Starts what the run needs before its input (a cluster task: its
    server); returns the RunConfig to use from now on."""

  def running(self) -> ContextManager[None]:
    """Around the rest of the run, however it ends."""

  def attach_run(self, rc, result) -> None:
    """Once the graph or step is built."""

  def doing(self, text: str) -> ContextManager[None]:
    """The main thread is doing ``text`` (stall reports say so)."""

  def timing_starts(self, stepper) -> None:
    """The timed loop starts; ``stepper`` is the session (graph engine) or
    the trainer (tf2 engine)."""

  def report(self, stepper, reporter, times) -> None:
    """Lines after the total (a cluster task adds its rates)."""

  def task_file_path(self, path: str) -> str:
    """Where this process writes a per-run file (--trace_file, ...)."""


class SessionRuntime(Runtime, Protocol):
  """A runtime the graph engine can run: graph, session, session.run
  steps (run/local_runtime.py, cluster/task/runtime.py)."""

  def wire_graph(self, variable_manager, global_step, step_op) -> Any:
    """The step op, with the runtime's own parts."""

  def open_session(self, graph, config) -> Any:
    """The session, watched."""

  def initialize(self, sess, built, restore: Callable[[], None]) -> None:
    """Initialises (or waits for) the variables; ``restore()`` restores a
    checkpoint where this task should."""

  def step_run_options(self) -> Any:
    """RunOptions of every session.run step (None: TensorFlow's)."""

  def run_step(self, sess, fetches, options) -> Any:
    """One session.run step, watched."""

  def untimed_step_feed(self) -> Any:
    """The feed of an extra step outside the count (a traced one): the
    same feed keys as the counted steps', so it runs their graph."""


class FunctionRuntime(Runtime, Protocol):
  """A runtime the tf2 engine can run: tf.function steps
  (run/local_runtime.py, cluster/task/tf2_runtime.py)."""

  def run_function_step(self, run: Callable[[], Any]) -> Any:
    """One step, ``run()``, watched."""

  def function_steps(self) -> ContextManager[None]:
    """Around the build and the steps."""


class Engine(Protocol):
  """What trains: chosen by --engine, handed to driver.run."""

  # The --engine value it answers to (config/flag_specs.py).
  name: str

  def prepare(self, rc) -> None:
    """Before the run touches TensorFlow's runtime."""

  def train(self, state, source, eval_source) -> None:
    """Builds the step, prints the header, runs the step loop to the
    report; ``state`` is the run's run_state.RunState."""
