"""Each distributed mode as a real multi-process cluster on loopback.

Run through `tf_cnn_benchmarks launch`, so the launcher (prefixes, summary,
ps exit, teardown) is exercised too. Synchronous modes must compute exactly
what a single process computes over the same global batch: the mean of the
workers' step losses equals the local replicated run's loss, step by step.
"""

import json

import numpy as np
import pytest

from tests.cluster import helpers

pytestmark = pytest.mark.cluster


def _assert_same_math(rec_by_task, workers, reference):
  # The update must show in the losses, or this compares forward passes
  # only: a missing or unaveraged update must be far outside rtol.
  assert abs(reference[-1] - reference[0]) > 50 * 1e-5 * abs(reference[0]), (
      reference)
  per_worker = np.array([helpers.step_losses(rec_by_task['worker%d' % i])
                         for i in range(workers)])
  np.testing.assert_allclose(per_worker.mean(axis=0), reference, rtol=1e-5)


def _assert_clean_finish(code, output, tasks, result_dir):
  assert code == 0, helpers.end_first(output)
  for label in tasks:
    assert '%-12s exit 0' % label in output, output
  assert 'Cluster total images/sec:' in output
  helpers.assert_ended_by_themselves(output)
  # Each training task's own record says it finished (the controller's
  # workers only serve, like ps tasks).
  trainers = (['controller0'] if 'controller0' in tasks else
              [t for t in tasks if t.startswith('worker')])
  recs = helpers.records(result_dir)
  assert sorted(recs) == trainers, sorted(recs)
  for label, rec in recs.items():
    assert rec['status'] == 'ok', (label, rec.get('failure'))


@pytest.mark.timeout(180)
def test_parameter_server_sync_equals_local_replicated(tmp_path):
  """2 workers x 1 tower, sync: one averaged update per cluster step."""
  code, output = helpers.launch(
      ['--ps', '1', '--workers', '2'],
      helpers.tiny_flags(tmp_path, variable_update='parameter_server'))
  _assert_clean_finish(code, output, ['ps0', 'worker0', 'worker1'],
                       str(tmp_path))
  assert '(exited by itself)' in output
  chief = helpers.task_lines(output, 'worker0')
  assert 'Sync:        True' in chief
  # The global step advanced once per cluster step, not once per worker.
  assert helpers.chief_global_steps(chief) == helpers.NUM_BATCHES
  for label in ('worker0', 'worker1'):
    assert any(l.startswith('%s images/sec: ' % label)
               for l in helpers.task_lines(output, label)), output
  assert any(l.startswith('total images/sec: ') for l in chief)
  recs = helpers.records(str(tmp_path))
  assert recs['worker0']['cluster_run_id'] == recs['worker1'][
      'cluster_run_id'] is not None
  _assert_same_math(recs, 2, helpers.local_losses(num_gpus=2))


@pytest.mark.timeout(240)
def test_parameter_server_barrier_applies_each_workers_gradient(tmp_path):
  """--sync_updates=barrier (the original's): every worker applies its own
  gradient, so the variables move N times per cluster step. With plain
  SGD, two applies of gradients taken at the same weights are one apply of
  their sum: the mean mode at twice the rate. worker1 enters every step
  2 s late (a test fault), so worker0 always reads the weights before
  worker1's update of that step; worker1 itself reads them after
  worker0's, so its gradient is taken half a step on, which moves the
  next weights only to second order in the rate (far below rtol here)."""
  lr = 1e-5  # Losses move ~5e-4 a step at this rate, at 2x ~1e-3.
  for run in ('barrier', 'mean'):
    (tmp_path / run).mkdir()
  code, output = helpers.launch_and_wait(
      tmp_path / 'barrier', 170, optimizer='sgd', init_learning_rate=lr,
      num_batches=helpers.NUM_BATCHES, display_every=1,
      sync_updates='barrier',
      env={helpers.FAULT_ENV: 'lag:worker1:step1:x2'})
  _assert_clean_finish(code, output, ['ps0', 'worker0', 'worker1'],
                       str(tmp_path / 'barrier'))
  chief = helpers.task_lines(output, 'worker0')
  assert 'Sync:        True (barrier: each worker applies its own ' \
         'gradient)' in chief
  # Each worker's update advances the global step, as in the original.
  assert helpers.chief_global_steps(chief) == 2 * helpers.NUM_BATCHES
  recs = helpers.records(str(tmp_path / 'barrier'))
  assert {r['config']['sync_updates'] for r in recs.values()} == {'barrier'}
  code, output = helpers.launch_and_wait(
      tmp_path / 'mean', 170, optimizer='sgd', init_learning_rate=2 * lr,
      num_batches=helpers.NUM_BATCHES, display_every=1)
  assert code == 0, helpers.end_first(output)
  sum_once = helpers.records(str(tmp_path / 'mean'))
  assert sum_once['worker0']['config']['sync_updates'] == 'mean'
  np.testing.assert_allclose(helpers.step_losses(recs['worker0']),
                             helpers.step_losses(sum_once['worker0']),
                             rtol=2e-6)


@pytest.mark.timeout(180)
def test_parameter_server_async_over_two_ps_tasks(tmp_path):
  """Asynchronous: each worker applies its own update when it has one and
  never waits for the other. worker1 sleeps 1 s before each of its steps
  (a test fault), worker0 does not: a synchronous step would take worker0
  that second too."""
  code, output = helpers.launch(
      ['--ps', '2', '--workers', '2'],
      helpers.tiny_flags(tmp_path, variable_update='parameter_server',
                         cross_replica_sync=False,
                         trace_file=str(tmp_path / 'trace.json'),
                         graph_file=str(tmp_path / 'graph.pbtxt')),
      env={helpers.FAULT_ENV: 'lag:worker1:step1:x1'})
  _assert_clean_finish(code, output, ['ps0', 'ps1', 'worker0', 'worker1'],
                       str(tmp_path))
  # Each worker writes its own trace and graph; the chief's keep the name.
  for name in ('trace.json', 'trace.worker1.json'):
    assert json.loads((tmp_path / name).read_text())['traceEvents']
  for name in ('graph.pbtxt', 'graph.worker1.pbtxt'):
    assert 'node {' in (tmp_path / name).read_text()
  assert output.count('(exited by itself)') == 2
  chief = helpers.task_lines(output, 'worker0')
  assert 'Sync:        False' in chief
  # Each worker applies its own updates: the global step counts both.
  assert helpers.chief_global_steps(chief) >= helpers.NUM_BATCHES
  # worker0 never waited for the lagging worker1 (~10 ms steps here).
  recs = helpers.records(str(tmp_path))
  own = recs['worker0']['timing']['step_times_sec']
  assert max(own) < 0.5, own
  assert min(recs['worker1']['timing']['step_times_sec']) > 0.9
  for ps in ('ps0', 'ps1'):
    assert 'every client is done; exiting' in ' '.join(
        helpers.task_lines(output, ps))


@pytest.mark.timeout(180)
def test_distributed_replicated_sync_two_towers_per_worker(tmp_path):
  code, output = helpers.launch(
      ['--ps', '1', '--workers', '2'],
      helpers.tiny_flags(tmp_path, variable_update='distributed_replicated',
                         num_gpus=2))
  _assert_clean_finish(code, output, ['ps0', 'worker0', 'worker1'],
                       str(tmp_path))
  chief = helpers.task_lines(output, 'worker0')
  assert "Devices:     ['/job:worker/task:0/device:CPU:0', " \
         "'/job:worker/task:0/device:CPU:1']" in chief
  assert helpers.chief_global_steps(chief) == helpers.NUM_BATCHES
  _assert_same_math(helpers.records(str(tmp_path)), 2,
                    helpers.local_losses(num_gpus=4))


@pytest.mark.timeout(180)
def test_collective_all_reduce(tmp_path):
  code, output = helpers.launch(
      ['--workers', '2'],
      helpers.tiny_flags(tmp_path, variable_update='collective_all_reduce'))
  _assert_clean_finish(code, output, ['worker0', 'worker1'],
                       str(tmp_path))
  assert '[ps' not in output
  _assert_same_math(helpers.records(str(tmp_path)), 2,
                    helpers.local_losses(num_gpus=2))


@pytest.mark.timeout(180)
def test_distributed_all_reduce_with_a_controller(tmp_path):
  code, output = helpers.launch(
      ['--workers', '2'],
      helpers.tiny_flags(tmp_path, variable_update='distributed_all_reduce'))
  _assert_clean_finish(code, output, ['worker0', 'worker1', 'controller0'],
                       str(tmp_path))
  controller = helpers.task_lines(output, 'controller0')
  assert "Devices:     ['/job:worker/task:0/device:CPU:0', " \
         "'/job:worker/task:1/device:CPU:0']" in controller
  assert "the controller's total" in output
  for worker in ('worker0', 'worker1'):
    assert '%s: every client is done; exiting' % worker in \
        helpers.task_lines(output, worker)
  # The record describes the cluster, not the single graph's view of it.
  record = helpers.records(str(tmp_path))['controller0']
  assert (record['config']['num_workers'], record['config']['num_devices'],
          record['config']['global_batch_size']) == (2, 1, 2 * 2)
  # One graph over both workers: its losses are the local run's.
  np.testing.assert_allclose(
      helpers.step_losses(record),
      helpers.local_losses(num_gpus=2), rtol=1e-5)


@pytest.mark.timeout(120)
def test_distributed_replicated_relaxed_pushes_the_previous_steps_mean(
    tmp_path):
  """--variable_consistency=relaxed: each worker sends the ps the mean of
  its previous step, exactly as a single process defers its all-reduce."""
  # tiny_flags' rate, said here: losses move ~2e-3 a step at it, so a
  # one-step lag is far outside the comparison's tolerance.
  lr = 1e-5
  code, output = helpers.launch(
      ['--ps', '1', '--workers', '2'],
      helpers.tiny_flags(tmp_path, variable_update='distributed_replicated',
                         variable_consistency='relaxed',
                         init_learning_rate=lr))
  _assert_clean_finish(code, output, ['ps0', 'worker0', 'worker1'],
                       str(tmp_path))
  relaxed = helpers.local_losses(num_gpus=2, variable_consistency='relaxed',
                                 init_learning_rate=lr)
  strong = helpers.local_losses(num_gpus=2, init_learning_rate=lr)
  # The reference itself lags strong consistency by one step (synthetic
  # data repeats one batch, so the weights a step sees are strong's of the
  # step before).
  assert not np.allclose(relaxed, strong, rtol=1e-5)
  np.testing.assert_allclose(relaxed[1:], strong[:-1], rtol=1e-5)
  _assert_same_math(helpers.records(str(tmp_path)), 2, relaxed)


@pytest.mark.timeout(240)
@pytest.mark.parametrize('mode', ['collective_all_reduce',
                                  'distributed_all_reduce'])
def test_tf2_multi_worker_mirrored_equals_two_local_towers(tmp_path, mode):
  """--engine=tf2: MultiWorkerMirroredStrategy over 2 workers trains what
  the graph engine trains with 2 towers in one process (--num_gpus=2
  replicated): each worker reports its replica's loss, and their mean is
  the graph engine's loss, step by step. lenet at its default learning
  rate: the losses fall by ~1 a step, so a gradient not averaged across
  workers, or a worker on the other's batch, is far outside the
  tolerance. distributed_all_reduce starts no controller under tf2."""
  overrides = dict(model='lenet', data_name='imagenet',
                   init_learning_rate=None)
  code, output = helpers.launch(
      ['--workers', '2'],
      helpers.tiny_flags(tmp_path, engine='tf2', variable_update=mode,
                         **overrides))
  _assert_clean_finish(code, output, ['worker0', 'worker1'], str(tmp_path))
  assert '[controller' not in output
  chief = helpers.task_lines(output, 'worker0')
  assert ('Variables:   %s (tf2 engine: tf.function, '
          'MultiWorkerMirroredStrategy)' % mode) in chief, output
  assert helpers.chief_global_steps(chief) == helpers.NUM_BATCHES
  recs = helpers.records(str(tmp_path))
  for rec in recs.values():
    assert rec['config']['engine'] == 'tf2'
    assert rec['config']['num_workers'] == 2
  reference = helpers.local_losses(num_gpus=2, **overrides)
  assert reference[0] - reference[-1] > 0.5, reference
  _assert_same_math(recs, 2, reference)


# --engine=tf2 --variable_update=parameter_server: ParameterServerStrategy,
# the launcher's controller task its coordinator; asynchronous, or a round
# of one step per worker at a time (--sync_updates=barrier).
_TF2_PS = dict(engine='tf2', variable_update='parameter_server',
               model='lenet', data_name='imagenet')
_TF2_PS_SYNC = {'async': dict(cross_replica_sync=False),
                'barrier': dict(sync_updates='barrier')}


@pytest.mark.timeout(180)
@pytest.mark.parametrize('sync', sorted(_TF2_PS_SYNC))
def test_tf2_parameter_server_one_worker_equals_one_local_device(tmp_path,
                                                                 sync):
  """With one worker, ParameterServerStrategy's steps run one after the
  other, each applying its gradient to the variables on ps0: exactly a
  single process's training on one device (the graph engine's), step by
  step. (With more workers the order of their updates is the runtime's,
  so no two runs are equal: see the next test.)"""
  code, output = helpers.launch(
      ['--ps', '1', '--workers', '1'],
      helpers.tiny_flags(tmp_path, init_learning_rate=None, **_TF2_PS,
                         **_TF2_PS_SYNC[sync]))
  _assert_clean_finish(code, output, ['ps0', 'worker0', 'controller0'],
                       str(tmp_path))
  controller = helpers.task_lines(output, 'controller0')
  assert ('Variables:   parameter_server (tf2 engine: tf.function, '
          'ParameterServerStrategy)') in controller, output
  for task in ('ps0', 'worker0'):
    assert '%s: every client is done; exiting' % task in \
        helpers.task_lines(output, task), output
  record = helpers.records(str(tmp_path))['controller0']
  reference = helpers.local_losses(
      model='lenet', data_name='imagenet', init_learning_rate=None,
      variable_update='parameter_server')
  assert reference[0] - reference[-1] > 0.3, reference
  np.testing.assert_allclose(helpers.step_losses(record), reference,
                             rtol=1e-5)


@pytest.mark.timeout(180)
@pytest.mark.parametrize('sync', sorted(_TF2_PS_SYNC))
def test_tf2_parameter_server_two_workers_each_apply_their_own(tmp_path,
                                                                sync):
  """Two workers: each of the coordinator's steps runs one step on each
  worker, each applying its own gradient (the graph engine's
  --cross_replica_sync=False, or --sync_updates=barrier): the global step
  counts both, exactly (the asynchronous mode queues no round beyond the
  run's steps), and the loss falls. Only that is compared: which worker
  reads the weights before the other's update is up to the runtime, as in
  the graph engine, so no loss sequence is reproducible."""
  steps = 12
  code, output = helpers.launch(
      ['--ps', '1', '--workers', '2'],
      helpers.tiny_flags(tmp_path, optimizer='sgd', init_learning_rate=0.002,
                         num_batches=steps, **_TF2_PS, **_TF2_PS_SYNC[sync]))
  _assert_clean_finish(code, output,
                       ['ps0', 'worker0', 'worker1', 'controller0'],
                       str(tmp_path))
  assert "the controller's total" in output
  controller = helpers.task_lines(output, 'controller0')
  assert ('Sync:        True (barrier' if sync == 'barrier' else
          'Sync:        False') in '\n'.join(controller), controller
  assert helpers.chief_global_steps(controller) == 2 * steps, output
  record = helpers.records(str(tmp_path))['controller0']
  assert record['config']['engine'] == 'tf2'
  losses = helpers.step_losses(record)
  assert len(losses) == steps
  assert np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3]), losses


@pytest.mark.timeout(180)
def test_tf2_parameter_server_momentum_over_two_ps_tasks(tmp_path):
  """Two ps tasks: ParameterServerStrategy places the variables round-robin
  over ps0 and ps1 (lenet's ten, the global step, then the slots), so each
  momentum slot must be created on its own variable's ps: ResourceApplyMomentum
  takes both handles. Created on its own, a slot landed on the next ps in
  turn and the first step failed ("Cannot place the graph ... colocation
  groups ... ps1 vs ps0"). Both ps tasks serve the run, it trains, and the
  global step counts both workers' steps."""
  steps = 12
  code, output = helpers.launch(
      ['--ps', '2', '--workers', '2'],
      helpers.tiny_flags(tmp_path, optimizer='momentum',
                         init_learning_rate=1e-4, num_batches=steps,
                         **_TF2_PS, **_TF2_PS_SYNC['async']))
  _assert_clean_finish(code, output,
                       ['ps0', 'ps1', 'worker0', 'worker1', 'controller0'],
                       str(tmp_path))
  assert 'Cannot place the graph' not in output, output
  for ps in ('ps0', 'ps1'):
    assert '%s: every client is done; exiting' % ps in \
        helpers.task_lines(output, ps), output
  controller = helpers.task_lines(output, 'controller0')
  assert helpers.chief_global_steps(controller) == 2 * steps, output
  losses = helpers.step_losses(helpers.records(str(tmp_path))['controller0'])
  assert len(losses) == steps
  assert np.all(np.isfinite(losses)), losses
  # At lenet's default rate (0.005) two workers' async momentum updates on
  # batches of two bounce the loss between 0.1 and 14, and once ended higher
  # than it began; at 1e-4 it fell smoothly, to about a third, in each run
  # tried.
  assert np.mean(losses[-3:]) < 0.5 * np.mean(losses[:3]), losses
