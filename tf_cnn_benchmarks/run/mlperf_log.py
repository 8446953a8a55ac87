"""--ml_perf_compliance_logging: the run's MLPerf log (:::MLLOG lines).

Written with MLPerf's own library (the mlperf-logging package's
``mlperf_logging.mllog``), to a file and to the console, so the package's
compliance checker reads it (``python -m mlperf_logging.compliance_checker
--ruleset 4.0.0 FILE``; 4.0.0 is the last ruleset with the resnet
benchmark). The events are those of MLPerf's resnet benchmark, in its
order:

  cache_clear, init_start, the submission (benchmark resnet, org, division,
  status, platform), the configuration (seed, global batch, gradient
  accumulation, train and eval samples, the optimizer and its
  hyperparameters, the learning-rate schedule, batch norm's span),
  init_stop, run_start; per block of training between evaluations
  block_start/block_stop, epoch_start/epoch_stop per epoch, then
  eval_start/eval_stop and eval_accuracy; run_stop with its status
  (success: the target was reached, else aborted).

The clock's origin is the step loop's (run/evaluation.py): run_start is
logged where the time to target starts. What this harness cannot meet of
MLPerf's rules (the dataset, the closed division's schedule) is in README
("MLPerf logs"); the log says division ``open`` for that reason.

The step loop and the driver call the milestones; ``NO_LOG`` is the run
without the flag (every milestone does nothing), so nobody tests for it.
"""

import json
import logging
import math
import os

# MLPerf's name of this benchmark (the compliance checker's
# submission_benchmark), and its ruleset.
BENCHMARK = 'resnet'
RULESET = '4.0.0'


class NoLog:
  """The milestones of a run without --ml_perf_compliance_logging."""

  path = None

  def run_starts(self, rc=None):
    del rc

  def trained(self, steps):
    del steps

  def evaluation_starts(self, step):
    del step

  def evaluated(self, evaluated):
    del evaluated

  def run_stops(self, status):
    del status


NO_LOG = NoLog()


class _ReporterHandler(logging.Handler):
  """The console side: each line through the run's reporter, so it lands
  between the report's lines (and in a test's captured report)."""

  def __init__(self, say):
    super().__init__(logging.INFO)
    self._say = say

  def emit(self, record):
    self._say(record.getMessage())


def log_path(params, run_id):
  """Where the log goes: --ml_perf_log_file, else beside the run record
  (--result_dir), else the working directory."""
  if params.ml_perf_log_file:
    return params.ml_perf_log_file
  directory = params.result_dir or '.'
  return os.path.join(directory, 'mlperf_%s.log' % run_id[:8])


def open_log(params, run_id, say):
  """The run's MLPerf log (init_start logged), or NO_LOG without the
  flag."""
  if not params.ml_perf_compliance_logging:
    return NO_LOG
  return MlPerfLog(params, log_path(params, run_id), say, run_id)


class MlPerfLog:
  """The :::MLLOG lines of one run."""

  def __init__(self, params, path, say, run_id):
    # Imported here: only a run with the flag needs the package (a usage
    # error says how to install it when it is missing: flag_checks.py).
    from mlperf_logging import mllog  # pylint: disable=g-import-not-at-top
    import mlperf_logging.mllog.mllog  # pylint: disable=g-import-not-at-top,unused-import
    self._c = mllog.constants
    self.params = params
    self.path = path
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    # A logger of this run's own (mllog's shared one would carry its
    # handlers into the next run in this process).
    logger = logging.getLogger('tf_cnn_benchmarks.mlperf.%s' % run_id)
    logger.propagate = False
    logger.setLevel(logging.INFO)
    self._file = logging.FileHandler(path, mode='w')
    self._file.setLevel(logging.INFO)
    logger.addHandler(self._file)
    logger.addHandler(_ReporterHandler(say))
    self._logger = logger
    self._log = mllog.mllog.MLLogger(logger=logger, default_stack_offset=2,
                               root_dir=os.path.dirname(os.path.dirname(
                                   os.path.dirname(os.path.abspath(
                                       __file__)))))
    self._rc = None
    self._steps = 0
    self._epoch_open = None   # 1-based number of the epoch under way
    self._block_open = None   # first epoch of the block under way
    self._stopped = False
    c = self._c
    # MLPerf's rules ask for the file system caches cleared before a run;
    # this harness does not (it would need root), and says so.
    self._log.event(key=c.CACHE_CLEAR, value=False)
    self._log.start(key=c.INIT_START)

  # -- the configuration, once the run's settings are final
  def _configuration(self, rc):
    c, p = self._c, self.params
    log = self._log.event
    log(key=c.SUBMISSION_BENCHMARK, value=BENCHMARK)
    log(key=c.SUBMISSION_ORG, value=p.ml_perf_submission_org)
    log(key=c.SUBMISSION_DIVISION, value=c.OPEN)
    log(key=c.SUBMISSION_STATUS, value=c.RESEARCH)
    log(key=c.SUBMISSION_PLATFORM, value=p.ml_perf_submission_platform or
        _platform(rc))
    log(key=c.SEED, value=p.tf_random_seed)
    log(key=c.GLOBAL_BATCH_SIZE, value=rc.global_batch_size)
    log(key=c.GRADIENT_ACCUMULATION_STEPS, value=1)
    log(key=c.TRAIN_SAMPLES, value=rc.examples_per_epoch)
    log(key=c.EVAL_SAMPLES, value=rc.eval_steps * rc.eval_batch_size_per_worker)
    # Batch norm's statistics span one device's batch (each tower
    # normalises its own).
    log(key=c.MODEL_BN_SPAN, value=rc.batch_size_per_device)
    self._optimizer(rc)

  def _optimizer(self, rc):
    """The optimizer and its hyperparameters, under MLPerf's names where it
    has them (sgd_opt_* for SGD, the resnet benchmark's keys)."""
    c, p = self._c, self.params
    log = self._log.event
    base = rc.initial_learning_rate
    sgd = p.optimizer in ('sgd', 'momentum')
    log(key=c.OPT_NAME, value=c.SGD if sgd else p.optimizer)
    log(key='sgd_opt_base_learning_rate' if sgd else c.OPT_BASE_LR,
        value=float(base))
    log(key='sgd_opt_weight_decay' if sgd else c.OPT_WEIGHT_DECAY,
        value=float(p.weight_decay))
    if sgd:
      # --optimizer=momentum is Nesterov momentum, as in the original.
      log(key='sgd_opt_momentum',
          value=float(p.momentum) if p.optimizer == 'momentum' else 0.0)
    log(key=c.OPT_LR_WARMUP_EPOCHS,
        value=float(p.num_learning_rate_warmup_epochs))
    if rc.piecewise_schedule is not None:
      rates, bounds = rc.piecewise_schedule
      log(key=c.OPT_LR_DECAY_BOUNDARY_EPOCHS, value=[float(b) for b in bounds])
      log(key=c.OPT_LR_DECAY_SCHEDULE, value='piecewise constant %s' % (
          ', '.join('%g' % r for r in rates)))
    elif p.num_epochs_per_decay > 0:
      log(key=c.OPT_LR_DECAY_FACTOR, value=float(p.learning_rate_decay_factor))
      log(key=c.OPT_LR_DECAY_INTERVAL, value=float(p.num_epochs_per_decay))
    if p.gradient_clip is not None:
      log(key=c.OPT_GRADIENT_CLIP_NORM, value=float(p.gradient_clip))

  # -- milestones (the step loop's)
  def run_starts(self, rc):
    c = self._c
    self._rc = rc
    self._configuration(rc)
    self._log.end(key=c.INIT_STOP)
    self._log.start(key=c.RUN_START)
    self._start_block()

  def _steps_per_epoch(self):
    return self._rc.examples_per_epoch / float(self._rc.global_batch_size)

  def _epoch_of(self, steps):
    """1-based number of the epoch of the step after ``steps`` steps."""
    return int(math.floor(steps / self._steps_per_epoch() + 1e-9)) + 1

  def _start_block(self):
    c = self._c
    first = self._epoch_of(self._steps)
    self._block_open = first
    self._log.start(key=c.BLOCK_START, metadata={
        c.FIRST_EPOCH_NUM: first, c.EPOCH_COUNT: self._epochs_to_next_eval()})
    self._open_epoch(first)

  def _epochs_to_next_eval(self):
    """Epochs until the next evaluation (MLPerf's block length), at least
    one step's worth; the run's remaining training when none is due."""
    # The step loop asks the engine when to evaluate; the schedule is the
    # run's (evaluation.schedule), computed the same way here.
    from tf_cnn_benchmarks.run import evaluation  # pylint: disable=g-import-not-at-top
    rc = self._rc
    spe = self._steps_per_epoch()
    warmup = rc.num_warmup_batches
    due = [warmup + s for s in evaluation.schedule(
        self.params, rc.num_batches, spe) if warmup + s > self._steps]
    next_steps = (due[0] if due else warmup + rc.num_batches) - self._steps
    return round(max(1, next_steps) / spe, 4)

  def _open_epoch(self, number):
    self._epoch_open = number
    self._log.start(key=self._c.EPOCH_START,
                    metadata={self._c.EPOCH_NUM: number})

  def _close_epoch(self):
    if self._epoch_open is not None:
      self._log.end(key=self._c.EPOCH_STOP,
                    metadata={self._c.EPOCH_NUM: self._epoch_open})
      self._epoch_open = None

  def _close_block(self):
    self._close_epoch()
    if self._block_open is not None:
      self._log.end(key=self._c.BLOCK_STOP,
                    metadata={self._c.FIRST_EPOCH_NUM: self._block_open})
      self._block_open = None

  def trained(self, steps):
    """Training step number ``steps`` (from 1, warm-up included) ran; its
    epoch and block begin with it (logged as it ends)."""
    if self._block_open is None:  # the first step after an evaluation
      self._steps = steps - 1
      self._start_block()
    epoch = self._epoch_of(steps - 1)
    if epoch != self._epoch_open:
      self._close_epoch()
      self._open_epoch(epoch)
    self._steps = steps

  def evaluation_starts(self, step):
    del step
    c = self._c
    self._close_block()
    self._log.start(key=c.EVAL_START,
                    metadata={c.EPOCH_NUM: self._epoch_now()})

  def _epoch_now(self):
    return round(self._steps / self._steps_per_epoch(), 4)

  def evaluated(self, evaluated):
    c = self._c
    epoch = (round(evaluated.epoch, 4) if evaluated.epoch is not None
             else self._epoch_now())
    self._log.end(key=c.EVAL_STOP, metadata={c.EPOCH_NUM: epoch})
    self._log.event(key=c.EVAL_ACCURACY, value=evaluated.top_1_accuracy,
                    metadata={c.EPOCH_NUM: epoch})

  def run_stops(self, status):
    """The run's end: ``status`` is the record's (run/run_result.py)."""
    if self._stopped:
      return
    self._stopped = True
    c = self._c
    self._close_block()
    if self._rc is not None:  # run_start was logged
      self._log.end(key=c.RUN_STOP, metadata={
          c.STATUS: c.SUCCESS if status == 'ok' else c.ABORTED})
    self._file.close()
    for handler in list(self._logger.handlers):
      self._logger.removeHandler(handler)


def _platform(rc):
  """The submission's platform: this machine's CPU (or accelerator), the
  device count and the engine."""
  # Imported here: measure/environment reads TensorFlow's build.
  from tf_cnn_benchmarks.measure import environment  # pylint: disable=g-import-not-at-top
  described = environment.describe(with_tensorflow=False)
  chip = described.get('accelerator') or described.get('cpu_model') or 'cpu'
  return '%dx%s (%s engine)' % (rc.num_towers * rc.num_workers, chip,
                               rc.params.engine)


def read_events(path):
  """[(key, value, metadata)] of an MLPerf log file (for tests and tools)."""
  events = []
  with open(path, encoding='utf-8') as f:
    for line in f:
      if line.startswith(':::MLLOG '):
        event = json.loads(line[len(':::MLLOG '):])
        events.append((event['key'], event['value'], event['metadata']))
  return events
