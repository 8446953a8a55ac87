"""The breakages the mutation check applies (check.py), one at a time.

Each is a regression a reviewer could make by accident, in code that a
document claims is tested (docs/claims.md names the claim and the id), with
the fastest tests that must turn red on it. A guard is a test that would
catch the feature breaking: when a breakage here survives, the test is
fixed, never the breakage softened. Texts are exact and must occur once in
their file; when the code moves, move the breakage with it.
"""

from tests.mutations.check import Breakage

_MODES = 'tests/cluster/test_modes.py::'
_TF2 = 'tests/test_engine_tf2.py::'
_DRIVER = 'tests/test_driver.py::'
_REPORTS = 'tests/test_failure_reports.py::'
_SCRIPTS = 'tests/test_benchmark_scripts.py::'

BREAKAGES = (
    # --- The nine (the cluster run count, results/comparison.py,
    # is guarded by the results engineer's test; it joins this list with
    # it).
    Breakage(
        'ps_sync_applies_no_update',
        'tf_cnn_benchmarks/variable_update/sync_replicas.py',
        'mean_grads.append((accumulator.take_grad(self.num_workers), var))',
        'mean_grads.append((accumulator.take_grad(self.num_workers) * 0., '
        'var))',
        (_MODES + 'test_parameter_server_sync_equals_local_replicated',),
        'synchronous parameter_server applies a zero update'),
    Breakage(
        'collective_sums_not_averages',
        'tf_cnn_benchmarks/variable_update/collective_all_reduce.py',
        "_GRADIENT_KEYS + j, 'Div',",
        "_GRADIENT_KEYS + j, 'Id',",
        (_MODES + 'test_collective_all_reduce',),
        "collective_all_reduce sums the workers' gradients"),
    Breakage(
        'tf2_xla_compile_ignored',
        'tf_cnn_benchmarks/engine_tf2/train_step.py',
        'jit_compile=True) if self._jit',
        'jit_compile=False) if self._jit',
        (_TF2 + 'test_tf2_xla_compile_marks_the_traced_step_for_xla',),
        '--engine=tf2 --xla_compile compiles nothing'),
    Breakage(
        'tf2_barrier_runs_async',
        'tf_cnn_benchmarks/engine_tf2/train_step.py',
        'rc.cluster.sync is SyncKind.BARRIER)',
        'rc.cluster.sync is SyncKind.MEAN)',
        (_TF2 + 'test_tf2_barrier_waits_for_each_round_and_async_queues_the_'
         'next',),
        'tf2 --sync_updates=barrier queues the next round (asynchronous)'),
    Breakage(
        'signal_grace_10s',
        'tf_cnn_benchmarks/liveness/stop_request.py',
        'SIGNAL_GRACE_SECONDS = 2.0',
        'SIGNAL_GRACE_SECONDS = 10.0',
        ('tests/test_liveness.py::test_sigterm_ends_a_run_blocked_in_a_step',),
        'a signalled run ends after 10 s, not ~2 s'),
    Breakage(
        'soak_slack_1000s',
        'studies/chaos_plan.py',
        'LOAD_SLACK_SECONDS = 5.0',
        'LOAD_SLACK_SECONDS = 1000.0',
        ('tests/cluster/test_chaos_soak.py::test_bounds_are_the_ones_'
         'reliability_md_prints',),
        "the chaos soak's bounds get 1000 s of slack"),
    Breakage(
        'power_counts_no_change_as_alarm',
        'studies/power_figures.py',
        "regressions=('verdict', lambda v: int((v == stats.REGRESSION).sum()))",
        "regressions=('verdict', lambda v: int((v != stats.INCONCLUSIVE).sum()))",
        ('tests/results/test_power_study.py::test_false_alarms_are_'
         'regressions_on_aa_trials_and_power_on_slowed',),
        'the power study counts "no change" as a false alarm'),
    Breakage(
        'engines_ratio_inverted',
        'benchmarks/engines.py',
        "' (%.2fx)' % (medians[v] / base)",
        "' (%.2fx)' % (base / medians[v])",
        (_SCRIPTS + 'test_engines_script_divides_each_engine_by_the_graph_'
         'engine',),
        'the engines table prints graph/tf2 instead of tf2/graph'),

    # --- One per --variable_update mode (and sync kind): its defining
    # behaviour.
    Breakage(
        'local_ps_applies_tower0_only',
        'tf_cnn_benchmarks/variable_update/parameter_server.py',
        'averaged.append((base.mean_of([g for g, _ in pairs]), var))',
        'averaged.append((pairs[0][0], var))',
        (_DRIVER + 'test_parameter_server_and_replicated_give_the_same_'
         'losses',),
        "parameter_server applies tower 0's gradient, not the towers' mean"),
    Breakage(
        'replicated_no_all_reduce',
        'tf_cnn_benchmarks/variable_update/replicated.py',
        'for g, (_, var) in zip(tower_means, pairs)]',
        'for g, var in pairs]',
        (_DRIVER + 'test_parameter_server_and_replicated_give_the_same_'
         'losses',),
        'replicated: each tower applies its own gradient (copies drift)'),
    Breakage(
        'independent_exchanges_gradients',
        'tf_cnn_benchmarks/variable_update/independent.py',
        'pairs = [pair for grads in tower_grads for pair in grads]',
        'pairs = [(base.mean_of([g[j][0] for g in tower_grads]), v) '
        'for grads in tower_grads for j, (_, v) in enumerate(grads)]',
        (_DRIVER + 'test_independent_towers_do_not_communicate',),
        'independent towers average their gradients'),
    Breakage(
        'distributed_replicated_stale_copies',
        'tf_cnn_benchmarks/variable_update/distributed_replicated.py',
        'return tf.group(self._refresh_copies(tower_grads, after=update))',
        'return tf.group(update)',
        (_MODES + 'test_distributed_replicated_sync_two_towers_per_worker',),
        'distributed_replicated never reads the updated master back'),
    Breakage(
        'distributed_all_reduce_sums',
        'tf_cnn_benchmarks/variable_update/distributed_all_reduce.py',
        'mean = base.mean_of(worker_means)',
        'mean = tf.math.add_n(worker_means)',
        (_MODES + 'test_distributed_all_reduce_with_a_controller',),
        "distributed_all_reduce sums the workers' means"),
    Breakage(
        'ps_async_waits_for_every_worker',
        'tf_cnn_benchmarks/variable_update/cluster_base.py',
        '    if self.role.sync is SyncKind.MEAN:\n      self.sync = ',
        '    if self.role.sync is not SyncKind.BARRIER:\n      self.sync = ',
        (_MODES + 'test_parameter_server_async_over_two_ps_tasks',),
        '--cross_replica_sync=False still waits for every worker (sync)'),
    Breakage(
        'ps_barrier_does_not_wait',
        'tf_cnn_benchmarks/variable_update/sync_barrier.py',
        'return tf.group(own_queue.dequeue_many(self.num_workers - 1))',
        'return tf.group(update)',
        (_MODES + 'test_parameter_server_barrier_applies_each_workers_'
         'gradient',),
        '--sync_updates=barrier: workers never meet at the barrier'),

    # --- One per guarantee of RELIABILITY.md (1 is signal_grace_10s too).
    Breakage(
        'g1_a_dead_peer_is_never_gone',
        'tf_cnn_benchmarks/cluster/watch/reachability.py',
        'REFUSALS_TO_GONE = 2',
        'REFUSALS_TO_GONE = 1000',
        (_REPORTS + 'test_two_refusals_in_a_row_mean_a_peer_is_gone',),
        'guarantee 1: a peer that died is never named (bounded end)'),
    Breakage(
        'g2_launcher_follows_the_first_exit',
        'tf_cnn_benchmarks/cluster/launch/launch_summary.py',
        'if votes[failed[0].label] > votes[named]:',
        'if True:',
        (_REPORTS + 'test_launcher_names_the_task_cut_off_by_a_partition',),
        "guarantee 2: the launcher names a partition's victim's peer"),
    Breakage(
        'cut_off_side_names_its_peer',
        'tf_cnn_benchmarks/cluster/watch/peer_failures.py',
        '  if own_label and reachability.no_route_from_here(address):',
        '  if False:',
        (_REPORTS + 'test_the_side_of_a_partition_with_no_route_of_its_own_'
         'names_itself',),
        'guarantee 2: the task cut off by a partition names its healthy peer'),
    Breakage(
        'root_cause_cut_off_names_its_peer',
        'tf_cnn_benchmarks/cluster/watch/root_cause.py',
        '          labels[own_index]))',
        '          None))',
        (_REPORTS + 'test_the_root_cause_search_of_a_task_cut_off_names_'
         'itself',),
        'guarantee 2: a cut-off task whose step failed first names its peer'),
    Breakage(
        'at_once_waits_in_turn',
        'tf_cnn_benchmarks/cluster/deadlines.py',
        '    thread.join(max(0.0, deadline - time.monotonic()))',
        '    thread.join(timeout_ms / 1000.0 + 1.0)',
        ('tests/cluster/test_done_signals.py::test_calls_at_once_share_one_'
         'deadline',),
        'guarantee 1: N silent serving tasks cost a leaving task N bounds'),
    Breakage(
        'exit_note_waits_for_ever',
        'tf_cnn_benchmarks/cluster/task/runtime.py',
        '    return deadlines.at_once([post], deadlines.RPC_TIMEOUT_MS)',
        '    return post()',
        ('tests/cluster/test_done_signals.py::test_an_exit_note_the_board_'
         'never_takes_holds_up_nobody',),
        "guarantee 1: an exit note the board's host never takes holds the "
        'task'),
    Breakage(
        'notes_land_out_of_order',
        'tf_cnn_benchmarks/cluster/task/runtime.py',
        '      with self._note_lock:',
        '      with contextlib.nullcontext():',
        ('tests/cluster/test_done_signals.py::test_an_exit_note_the_board_'
         'never_takes_holds_up_nobody',),
        "guarantee 2: a provisional note that overran its bound lands after "
        'the final one'),
    Breakage(
        'teardown_confirms_in_turn',
        'tf_cnn_benchmarks/cluster/launch/task_processes.py',
        'max(1, min(len(started), _CONFIRMING_AT_ONCE))',
        '1',
        (_REPORTS + 'test_the_launcher_confirms_every_remote_task_gone_at_'
         'once',),
        "guarantee 1: the launcher's teardown waits for each silent host in "
        'turn'),
    Breakage(
        'cut_off_ps_names_its_clients',
        'tf_cnn_benchmarks/cluster/task/serving_task.py',
        '          reachability.no_route_from_here(self.clients[label])):',
        '          False):',
        (_REPORTS + 'test_a_ps_with_no_route_of_its_own_says_it_is_the_one_'
         'cut_off',),
        'guarantee 2: a ps whose own link is down blames its clients'),
    Breakage(
        'g3_stalled_exits_1',
        'tf_cnn_benchmarks/liveness/endings.py',
        'STALLED: exit_codes.STALLED,',
        'STALLED: exit_codes.RUN_FAILED,',
        ('tests/test_claims.py::test_exit_codes_are_the_documented_ones',),
        'guarantee 3: a stalled run exits 1, not the documented 3'),
    Breakage(
        'g4_a_refused_copy_is_never_run_again',
        'tf_cnn_benchmarks/cluster/task/step_repeats.py',
        'if not (may_repeat and refused_copy) or',
        'if not (False and refused_copy) or',
        ('tests/cluster/test_step_repeats.py::test_an_asynchronous_step_is_'
         'run_again_at_most_max_repeats_times',),
        'guarantee 4: a refused copy ends an asynchronous run'),
    Breakage(
        'resends_blamed_though_off',
        'tf_cnn_benchmarks/cluster/task/step_repeats.py',
        "    return int(os.environ.get('GRPC_MAX_RETRIES') or 0) > 0\n",
        '    return True\n',
        ('tests/cluster/test_step_repeats.py::test_the_cause_named_follows_'
         'whether_tensorflow_resends',),
        'a refused copy blames the network though TensorFlow resends '
        'nothing'),
    Breakage(
        'g5_tasks_outlive_a_killed_launcher',
        'tf_cnn_benchmarks/cluster/launch/process_groups.py',
        'libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG',
        'libc.getpid()  # no PR_SET_PDEATHSIG',
        ('tests/cluster/test_failures.py::test_killed_launcher_leaves_no_'
         'orphans',),
        'guarantee 5: a SIGKILLed launcher leaves its tasks running'),
    Breakage(
        'g6_records_written_in_place',
        'basics/atomic_files.py',
        "    with os.fdopen(fd, 'wb') as temp_file:",
        "    os.close(fd)\n    with open(path, 'wb') as temp_file:",
        ('tests/test_atomic_files.py::test_a_write_that_fails_leaves_the_old_'
         'file_whole',),
        'guarantee 6: a record is written in place (a crash half-writes it)'),
    Breakage(
        'g7_resume_ignores_the_checkpoint',
        'tf_cnn_benchmarks/engine_graph/checkpoints.py',
        '  if latest:\n    built.saver.restore(sess, latest)',
        '  if latest and False:\n    built.saver.restore(sess, latest)',
        (_DRIVER + 'test_train_then_resume_then_eval',),
        'guarantee 7: a new run on a --train_dir starts from step 0'),

    # --- README's other tested claims.
    Breakage(
        'jitter_constant',
        'tf_cnn_benchmarks/run/timing.py',
        'MAD_TO_STDDEV = 1.4826',
        'MAD_TO_STDDEV = 1.482602',
        ('tests/test_timing.py::test_statistics_match_the_original_'
         'definitions',),
        "jitter is not the original's 1.4826 x MAD"),
    Breakage(
        'total_rate_counts_one_worker',
        'tf_cnn_benchmarks/run/timing.py',
        'return (num_workers * len(self.timed) * self.images_per_step /',
        'return (len(self.timed) * self.images_per_step /',
        ('tests/test_timing.py::test_total_counts_the_whole_loop_and_every_'
         'worker',),
        "total images/sec leaves out the other workers' images"),
    Breakage(
        'train_dir_not_locked',
        'tf_cnn_benchmarks/run/train_dir_lock.py',
        '    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)',
        '    pass',
        ('tests/test_train_dir_lock.py::test_lock_is_exclusive_within_one_'
         'process_too',),
        'two runs may share a --train_dir'),
    Breakage(
        'weight_decay_sign',
        'tf_cnn_benchmarks/training/weight_decay.py',
        'alpha=tf.constant(-rate, grad.dtype)',
        'alpha=tf.constant(rate, grad.dtype)',
        ('tests/test_weight_decay.py::test_gradients_are_the_penalised_loss_s_'
         'bit_for_bit',),
        "the weight decay's gradient is subtracted, not added"),
    Breakage(
        'batch_group_copies_do_not_wait',
        'tf_cnn_benchmarks/engine_graph/batch_group.py',
        '      with tf.control_dependencies([previous_step]):',
        '      with tf.control_dependencies([]):',
        ('tests/test_batch_group.py::test_grouped_steps_train_exactly_like_'
         'single_steps',),
        "--batch_group_size: a step's copy does not wait for the last update"),
    Breakage(
        'malloc_trims_again',
        'tf_cnn_benchmarks/process/malloc_tuning.py',
        "('trim_threshold', M_TRIM_THRESHOLD, 1 << 30,",
        "('trim_threshold', M_TRIM_THRESHOLD, 1 << 17,",
        ('tests/test_malloc_tuning.py::test_the_settings_are_the_documented_'
         'ones',),
        '--tune_malloc gives freed memory back (glibc\'s default trim)'),
    Breakage(
        'graph_xla_not_enabled_on_cpu',
        'tf_cnn_benchmarks/config/run_config.py',
        "  if '--tf_xla_cpu_global_jit' not in flags:",
        '  if False:',
        ('tests/test_xla_cpu.py::test_xla_compile_clusters_on_cpu_and_'
         'matches',),
        'graph --xla_compile compiles nothing on a CPU'),
    Breakage(
        'straggler_threshold_5x',
        'tf_cnn_benchmarks/cluster/watch/stragglers.py',
        'THRESHOLD = 2.0',
        'THRESHOLD = 5.0',
        ('tests/cluster/test_stragglers.py::test_sync_worker_between_steps_'
         'three_quarters_is_named_once',),
        'a worker 3.85x slower is not named a straggler (README: 2x)'),
    Breakage(
        'straggler_gaps_not_on_the_board',
        'tf_cnn_benchmarks/cluster/task/tf2_board.py',
        '      self._between += between',
        '      pass',
        ('tests/cluster/test_tf2_board.py::test_a_step_writes_the_board_'
         'once_and_its_completion_follows',),
        'a tf2 worker\'s time between steps never reaches the board, so the '
        'chief cannot name it a straggler'),
    Breakage(
        'collective_gaps_not_published',
        'tf_cnn_benchmarks/cluster/task/runtime.py',
        'self.board.publish_start(sess, deadlines.RPC_TIMEOUT_MS, between)',
        'self.board.publish_start(sess, deadlines.RPC_TIMEOUT_MS)',
        ('tests/cluster/test_stragglers.py::test_a_worker_publishes_its_gaps_'
         'and_leaves_a_checkpoint_save_out',),
        'a collective or tf2 worker\'s time between steps never reaches the '
        'board, so the chief cannot name it a straggler'),
    Breakage(
        'others_gaps_counted_as_the_stragglers',
        'tf_cnn_benchmarks/cluster/watch/stragglers.py',
        'excess = min(max(0.0, gap - statistics.median(others)),',
        'excess = min(max(0.0, gap),',
        ('tests/cluster/test_stragglers.py::test_the_others_own_gaps_are_not_'
         'counted_as_the_stragglers',),
        'a straggler\'s slowdown counts the gaps every worker has, so it '
        'over-reads wherever the loop between steps is not ~free'),
    Breakage(
        'checkpoint_save_not_named_work',
        'tf_cnn_benchmarks/engine_graph/checkpoints.py',
        "    with self.runtime.doing('saving a checkpoint to %s' %",
        "    with __import__('contextlib').nullcontext('saving a checkpoint to %s' %",
        ('tests/cluster/test_stragglers.py::test_the_chiefs_checkpoint_save_'
         'runs_as_named_work',),
        "the chief's save runs outside runtime.doing, so it counts in its "
        'gap (and a stall in it is not named)'),
    Breakage(
        'checkpoint_save_counted_as_a_gap',
        'tf_cnn_benchmarks/cluster/task/runtime.py',
        '0.0, now - returned - self._named_work_seconds)',
        '0.0, now - returned)',
        ('tests/cluster/test_stragglers.py::test_a_worker_publishes_its_gaps_'
         'and_leaves_a_checkpoint_save_out',),
        'the chief\'s checkpoint saves count as its slowness, so a long save '
        'in a synchronous cluster names it a straggler'),
    Breakage(
        'ps_placement_ignores_size',
        'tf_cnn_benchmarks/variable_update/cluster_base.py',
        'task = min(range(len(self.loads)), key=lambda i: (self.loads[i], i))',
        'task = len(self.loads) - 1',
        ('tests/cluster/test_cluster_config.py::test_ps_placement_spreads_'
         'variables_by_size',),
        'parameter_server piles every variable on one ps task'),
    # --- More of README's, docs/cluster.md's and PERFORMANCE.md's tested
    # claims (docs/claims.md maps each).
    Breakage(
        'flag_default_changed',
        'tf_cnn_benchmarks/config/flag_specs.py',
        "_S(OPTIMIZER, 'weight_decay', 'float', 4e-5,",
        "_S(OPTIMIZER, 'weight_decay', 'float', 1e-4,",
        ('tests/test_flags.py::test_every_original_flag_is_answered',),
        "a flag's default is not the original's"),
    Breakage(
        'report_columns_renamed',
        'tf_cnn_benchmarks/run/report.py',
        "cols = ['Step', 'Img/sec', self.loss_name]",
        "cols = ['Step', 'Images/sec', self.loss_name]",
        (_DRIVER + 'test_report_has_the_original_format',),
        "the step rows are not the original's"),
    Breakage(
        'name_seeds_per_tower',
        'tf_cnn_benchmarks/variable_update/base.py',
        "      if 'seed' in config:",
        "      if False:",
        (_MODES + 'test_tf2_parameter_server_one_worker_equals_one_local_'
         'device[async]',),
        "initial weights are not seeded from the mode-independent name"),
    Breakage(
        'towers_share_one_cpu_device',
        'tf_cnn_benchmarks/config/run_config.py',
        "config.device_count['CPU'] = num_cpu_devices or run_config.num_towers",
        "config.device_count['CPU'] = 1",
        (_DRIVER + 'test_independent_towers_do_not_communicate',),
        '--num_gpus=N makes no virtual CPU device per tower'),
    Breakage(
        'checkpoint_saved_twice',
        'tf_cnn_benchmarks/engine_graph/checkpoints.py',
        '    if step == self.saved_step:',
        '    if False:',
        (_REPORTS + 'test_no_checkpoint_is_written_twice_for_one_step',),
        'a checkpoint is saved again though the global step did not move'),
    Breakage(
        'tf2_cluster_on_old_tensorflow',
        'tf_cnn_benchmarks/config/flag_checks.py',
        "TF2_CLUSTER_MIN_TF = '2.19'",
        "TF2_CLUSTER_MIN_TF = '2.12'",
        (_TF2 + 'test_tf2_cluster_tasks_need_the_tensorflow_their_runtime_'
         'uses',),
        'a tf2 cluster task starts on a TensorFlow without the registration '
        'barrier'),
    Breakage(
        'tf2_skips_graph_only_flags',
        'tf_cnn_benchmarks/config/flag_checks.py',
        "    if getattr(p, name) != flag_specs.SPECS_BY_NAME[name].default:\n"
        "      raise UsageError(\n"
        "          '--%s (%s) is not implemented",
        "    if False:\n"
        "      raise UsageError(\n"
        "          '--%s (%s) is not implemented",
        (_TF2 + 'test_tf2_refuses_what_has_no_tf2_equivalent_naming_the_'
         'graph_engine',),
        '--engine=tf2 silently skips graph-engine-only flags'),
    Breakage(
        'tf2_replicas_sum',
        'tf_cnn_benchmarks/engine_tf2/optimizer.py',
        'tf.distribute.ReduceOp.MEAN, grads_and_vars)',
        'tf.distribute.ReduceOp.SUM, grads_and_vars)',
        (_MODES + 'test_tf2_multi_worker_mirrored_equals_two_local_towers'
         '[collective_all_reduce]',),
        "the tf2 engine sums its replicas' gradients"),
    Breakage(
        'tf2_momentum_never_moves',
        'tf_cnn_benchmarks/engine_tf2/optimizer.py',
        'accum=slot.handle, lr=lr, grad=grad,',
        'accum=slot.handle, lr=lr * 0, grad=grad,',
        (_MODES + 'test_tf2_parameter_server_momentum_over_two_ps_tasks',),
        "the tf2 engine's momentum updates leave the variables where they "
        'were'),
    Breakage(
        'architecture_layer_broken',
        'tf_cnn_benchmarks/liveness/phases.py',
        'import contextlib\nimport dataclasses\n',
        'import contextlib\nimport dataclasses\n'
        'from tf_cnn_benchmarks.run import timing  # pylint: disable=unused-import\n',
        ('tests/test_architecture.py::test_every_import_respects_the_layers',),
        'liveness/ imports run/ (docs/architecture.md forbids it)'),
    Breakage(
        'g2_cause_search_shortened',
        'tf_cnn_benchmarks/cluster/watch/root_cause.py',
        'PEER_FAILURE_WAIT_SECONDS = 4.0',
        'PEER_FAILURE_WAIT_SECONDS = 1.0',
        ('tests/test_claims.py::test_constants_the_documents_quote_are_the_'
         'codes',),
        'guarantee 2: the root-cause search is not the documented 4 s'),
    Breakage(
        'secondary_error_taken_as_cause',
        'tf_cnn_benchmarks/cluster/watch/peer_failures.py',
        "                      'Collective ops is aborted')",
        "                      )",
        (_REPORTS + 'test_secondary_errors_are_recognised',),
        "a collective abort is taken for this task's own failure"),
    Breakage(
        'unreachable_called_gone',
        'tf_cnn_benchmarks/cluster/watch/reachability.py',
        '  return reason in (REFUSED, RESET)',
        '  return True',
        (_REPORTS + 'test_a_lost_peer_is_gone_or_unreachable_by_its_probe_'
         'alone',),
        'a partition is reported as a crashed peer (exit 1, not 4)'),
    Breakage(
        'oom_hint_same_batch',
        'tf_cnn_benchmarks/failures.py',
        '      lead, batch, peak_text, max(1, rc.batch_size_per_device // 2))',
        '      lead, batch, peak_text, rc.batch_size_per_device)',
        (_REPORTS + 'test_oom_hint_names_the_shape_and_a_smaller_batch',),
        'the out-of-memory hint does not offer a smaller batch'),
    Breakage(
        'stall_names_no_input_file',
        'tf_cnn_benchmarks/liveness/local_stall.py',
        "      files = ('open under --data_dir: %s' % ', '.join(reading) if "
        "reading",
        "      files = ('open under --data_dir: %s' % ', '.join(reading) if "
        "False",
        ('tests/test_liveness.py::test_a_stall_on_input_names_the_file_being_'
         'read',),
        'a stall on input does not name the file being read'),
    Breakage(
        'dataset_labels_from_zero',
        'preprocessing/build_dataset.py',
        'ids = {synset: (i + 1, text) for i, (synset, text) in '
        'enumerate(labels)}',
        'ids = {synset: (i, text) for i, (synset, text) in '
        'enumerate(labels)}',
        ('tests/preprocessing/test_build_dataset.py::test_round_trip_every_'
         'key',),
        'build-dataset labels classes from 0 (0 is background)'),
    Breakage(
        'corrupt_record_not_named',
        'preprocessing/errors.py',
        "    where = ' record %d of %s' % (index, path)",
        "    where = ' a record of %s' % path",
        ('tests/preprocessing/test_bad_input.py::test_corrupt_record',),
        'a corrupt record is not named with its file and index'),
    Breakage(
        'resnet_v1_strides_in_the_3x3',
        'models/resnet.py',
        '    return [(filters, 1, stride), (filters, 3, 1), (out, 1, 1)]',
        '    return [(filters, 1, 1), (filters, 3, stride), (out, 1, 1)]',
        ('tests/models/test_resnet.py::test_downsampling_bottleneck_stride_'
         'placement',),
        "resnet50 is v1.5, not the original's v1"),
    Breakage(
        'ncf_mlp_resized',
        'models/ncf.py',
        'NUM_ITEMS = 26744',
        'NUM_ITEMS = 26745',
        ('tests/models/test_ncf.py::test_parameter_count_is_the_hand_count',),
        "ncf is not the original's size (31,832,577 parameters)"),
    Breakage(
        'weight_decay_sum_on_the_ps',
        'tf_cnn_benchmarks/training/weight_decay.py',
        '  with tf1.device(None), tf1.colocate_with(grad.op, '
        'ignore_existing=True), \\\n      tf1.device(grad.device), '
        'tf1.name_scope(',
        '  with tf1.name_scope(',
        ('tests/test_weight_decay.py::test_each_sum_stays_on_its_gradient_s_'
         'device',),
        "the decay's sum leaves its gradient's device (ps_sync 0.77x)"),
    # --- Fast guards of more rows of docs/claims.md.
    Breakage(
        'malloc_overrides_your_setting',
        'tf_cnn_benchmarks/process/malloc_tuning.py',
        "    if variable in environ or tunable + '=' in tunables:",
        '    if False:',
        ('tests/test_malloc_tuning.py::test_a_setting_of_your_own_is_kept',),
        "--tune_malloc overrides the user's own MALLOC_*_/GLIBC_TUNABLES"),
    Breakage(
        'refused_flag_accepted',
        'tf_cnn_benchmarks/config/flag_checks.py',
        '  for s in REFUSED_SPECS:\n    if getattr(p, s.name) != s.default:',
        '  for s in REFUSED_SPECS:\n    if False:',
        ('tests/test_flags.py::test_refused_flag_parses_at_its_default_only'
         '[trt_mode]',),
        'a refused flag is silently accepted at another value'),
    Breakage(
        'barrier_allowed_in_a_single_process',
        'tf_cnn_benchmarks/config/flag_checks.py',
        "  if not is_cluster_task(p):\n    where = 'a single process",
        "  if False:\n    where = 'a single process",
        ('tests/test_flags.py::test_sync_updates_barrier_only_in_a_'
         'synchronous_ps_cluster',),
        '--sync_updates=barrier accepted where nothing synchronises'),
    Breakage(
        'tf_config_chief_not_worker0',
        'tf_cnn_benchmarks/cluster/roles.py',
        '  jobs[WORKER] = chief + jobs[WORKER]',
        '  jobs[WORKER] = jobs[WORKER] + chief',
        ('tests/cluster/test_cluster_config.py::test_tf_config_spec_file_with_'
         'a_chief',),
        "a TF_CONFIG chief is not worker 0"),
    Breakage(
        'per_task_files_collide',
        'tf_cnn_benchmarks/cluster/roles.py',
        '  if role is None or role.is_chief:\n    return path',
        '  if True:\n    return path',
        ('tests/cluster/test_cluster_config.py::test_per_task_files_do_not_'
         'collide',),
        "every task writes the chief's --trace_file path"),
    Breakage(
        'import_cycle',
        'tf_cnn_benchmarks/liveness/activity.py',
        '  def rename(self, text):\n',
        '  def rename(self, text):\n'
        '    from tf_cnn_benchmarks.liveness import watchdog  # pylint: '
        'disable=unused-import\n',
        ('tests/test_architecture.py::test_no_import_cycle_anywhere',),
        'an import cycle (lazy): activity -> watchdog -> activity'),
    Breakage(
        'liveness_imports_tensorflow',
        'tf_cnn_benchmarks/liveness/phases.py',
        'import threading\nimport time\n',
        'import threading\nimport time\n\nimport tensorflow  # pylint: '
        'disable=unused-import\n',
        ('tests/test_architecture.py::test_tensorflow_free_modules_load_no_'
         'tensorflow',),
        'liveness/ loads TensorFlow (a signal while it loads is then late)'),
    Breakage(
        'eval_line_not_the_originals',
        'tf_cnn_benchmarks/run/evaluation.py',
        "  return 'Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%d examples]' % (",
        "  return 'top-1 = %.4f top-5 = %.4f [%d examples]' % (",
        (_DRIVER + 'test_train_then_resume_then_eval',),
        "the evaluation line is not the original's"),
    Breakage(
        'flops_one_per_multiply_add',
        'tf_cnn_benchmarks/measure/flops.py',
        '  return 2 * elements * contracted',
        '  return elements * contracted',
        ('tests/test_flops.py::test_formulas_on_small_ops',),
        'a matmul counts 1 FLOP per multiply-add, not 2 (MFU halves)'),
    Breakage(
        'updates_copy_their_variable',
        'tf_cnn_benchmarks/training/update_in_place.py',
        '  if not grads:\n    return tower_grads',
        '  if True:\n    return tower_grads',
        ('tests/test_update_in_place.py::test_no_update_allocates_a_copy_of_'
         'its_variable',),
        'no gate: an update copies its variable (16 MB a step on trivial)'),
    Breakage(
        'no_tensorflow_traceback',
        'tf_cnn_benchmarks/process/logs.py',
        "'have. Install one: pip install -e \".[cpu]\" (tensorflow-cpu), '",
        "'have. Install one (tensorflow-cpu), '",
        (_DRIVER + 'test_no_tensorflow_says_how_to_install_one',),
        'without TensorFlow the run does not say how to install one'),
    # --- This wave's safety fixes (RELIABILITY.md guarantees 1, 2, 5, S*).
    Breakage(
        'sighup_not_a_stop_signal',
        'basics/stop_signals.py',
        'STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)',
        'STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)',
        ('tests/test_hangup.py::test_closing_the_terminal_ends_the_run_with_'
         'its_record',),
        'a closed terminal (SIGHUP) kills a run with no record'),
    Breakage(
        'garbled_note_disables_checks',
        'tf_cnn_benchmarks/cluster/task/progress_board.py',
        "  if not isinstance(value, dict) or value.get('status') not in "
        "NOTE_STATUSES:\n    return _malformed(value)",
        "  if False:\n    return _malformed(value)",
        ('tests/cluster/test_board_notes.py::test_the_watch_still_ends_a_'
         'lockstep_task_naming_the_peer',),
        'a garbled board note raises in the watchdog every tick'),
    Breakage(
        'startup_waits_add_up',
        'tf_cnn_benchmarks/cluster/task/start_protocol.py',
        'self.barrier.wait_until_created(sess, self.startup.left())',
        'self.barrier.wait_until_created(sess, self.startup.timeout)',
        ('tests/cluster/test_startup_bound.py::test_a_barrier_wait_takes_'
         'only_what_start_up_has_left',),
        'each start-up wait takes the whole --startup_timeout'),
    Breakage(
        'vanished_name_is_a_partition',
        'tf_cnn_benchmarks/cluster/watch/reachability.py',
        '      reason is not None and reason.startswith(NO_SUCH_NAME))',
        '      False)',
        ('tests/cluster/test_dns_probes.py::test_a_vanished_name_is_gone_'
         'and_a_silent_dns_is_bounded',),
        "a crashed pod's vanished name counts as a partition"),
    Breakage(
        'data_failure_note_after_rescan',
        'tf_cnn_benchmarks/cluster/task/runtime.py',
        '      if self._rc.params.data_dir and preprocessing.may_need_locating'
        '(exc):',
        '      if False:',
        ('tests/cluster/test_board_notes.py::test_a_data_failure_is_on_the_'
         'board_before_its_record_is_located',),
        'a corrupt-data task posts its note only after re-reading shards'),
    Breakage(
        'suite_orphans_its_benchmark',
        'results/runner.py',
        '    except BaseException:   # Ctrl-C, SIGTERM, SIGHUP: stop the '
        'benchmark.\n      _stop(process)',
        '    except BaseException:   # Ctrl-C, SIGTERM, SIGHUP: stop the '
        'benchmark.\n      pass',
        ('tests/results/test_suite.py::test_a_stopped_suite_stops_its_'
         'benchmark',),
        'a stopped suite leaves its benchmark running'),
    Breakage(
        'pip_unpinned',
        'results/venvs.py',
        '       PIP_REQUIREMENT],',
        "       '--upgrade', 'pip'],",
        ('tests/results/test_matrix.py::test_venvs_install_a_pinned_pip',),
        "matrix/bisect venvs install whatever pip is newest"),
    Breakage(
        'pooling_keeps_runs_apart',
        'benchmarks/vs_original_pooled.py',
        "['harness', 'configuration', 'variant'], sort=False)",
        "['harness', 'configuration', 'variant', 'run'], sort=False)",
        ('tests/test_performance_doc.py::test_two_runs_of_one_configuration_'
         'at_one_commit_pool_into_one_row',),
        "PERFORMANCE.md's pooled rows quote one run of a configuration, not "
        'every run at its commit'),
    # --- The dashboard's answering charts (issue #32).
    Breakage(
        'forest_draws_the_medians',
        'results/charts/change.py',
        '    rows.append((labels[row.key], result.change_pct, '
        'result.change_pct_low,',
        '    rows.append((labels[row.key], row.median_change_pct, '
        'result.change_pct_low,',
        ('tests/results/test_dashboard_charts.py::test_the_forest_plot_draws_'
         'compare_s_changes_and_verdicts',),
        "the forest plot's points are the medians' change, not compare's "
        'estimate'),
    Breakage(
        'version_matrix_reversed',
        'results/charts/versions.py',
        "frame, 'tf_version', self.reference, version, alpha=alpha,",
        "frame, 'tf_version', version, self.reference, alpha=alpha,",
        ('tests/results/test_dashboard_charts.py::test_the_version_matrix_'
         'writes_each_cell_s_change_and_family_verdict',),
        'the version matrix compares the reference against each version'),
    Breakage(
        'table_notes_repeated',
        'results/tables.py',
        '      if counts[part] < 2:\n        own.append(part)',
        '      if True:\n        own.append(part)',
        ('tests/results/test_dashboard_charts.py::test_an_a_b_page_opens_on_'
         'the_change_and_says_each_note_once',),
        "the dashboard's table repeats a note for every row"),
    Breakage(
        'unreached_target_drawn_as_zero',
        'results/charts/convergence.py',
        '    reached = [t for t in times if math.isfinite(t)]',
        '    reached = [t if math.isfinite(t) else 0.0 for t in times]',
        ('tests/results/test_dashboard_charts.py::test_the_accuracy_chart_'
         'draws_every_curve_and_the_target',),
        'a run that never reached its target is drawn at 0 s'),
    Breakage(
        'dashboard_prints_paths',
        'results/dashboard.py',
        "  return sorted({comparison_lib.group_display('dir', str(d))",
        "  return sorted({str(d)",
        ('tests/results/test_dashboard_charts.py::test_an_a_b_page_opens_on_'
         'the_change_and_says_each_note_once',),
        'the dashboard names the measuring machine\'s folders by full path'),
    # --- The ssh launcher across a network drop (issue #29, High 2).
    Breakage(
        'guard_drops_unconfirmed_records',
        'tf_cnn_benchmarks/cluster/launch/ssh_remote.py',
        '    keep = bool(records) and not acked.is_set()',
        '    keep = False',
        ('tests/cluster/test_guard_lines.py::test_the_guard_keeps_the_'
         'records_the_launcher_did_not_confirm',),
        'the remote guard deletes records the launcher never confirmed'),
    Breakage(
        'ssh_gives_up_after_15s',
        'tf_cnn_benchmarks/cluster/launch/ssh_hosts.py',
        '                        3, math.ceil(silent_seconds /',
        '                        3, 0 * math.ceil(silent_seconds /',
        ('tests/cluster/test_ssh_placement.py::test_a_task_s_ssh_waits_out_a_'
         'silence_as_long_as_the_run_s_own_bounds',),
        "a task's ssh connection is given up after 15 s of silence"),
    Breakage(
        'bisect_page_names_the_newest_slower',
        'results/charts/versions.py',
        '    for version in self.versions[1:]:',
        '    for version in reversed(self.versions[1:]):',
        ('tests/results/test_dashboard_charts.py::test_a_bisect_folder_names_'
         'its_steps_and_the_release_it_found',),
        "a bisect folder's page names the newest slower release, not the "
        'first'),
    # --- A long collective run's threads (issue #29's soak found it).
    Breakage(
        'collective_timeout_thread_per_run',
        'tf_cnn_benchmarks/variable_update/collective_all_reduce.py',
        '                                timeout=0)',
        '                                timeout=self.role.step_deadline_'
        'seconds or 0)',
        ('tests/cluster/test_long_runs.py::test_collective_run_with_a_step_'
         'deadline_keeps_a_flat_thread_count',),
        'every all-reduce of every step leaves a thread sleeping out its '
        'timeout'),
    # --- The same leak under the tf2 engine, and its step's deadline.
    Breakage(
        'tf2_collective_timeout_thread_per_run',
        'tf_cnn_benchmarks/cluster/task/tf2_runtime.py',
        '    options = tf.distribute.experimental.CommunicationOptions()',
        '    options = tf.distribute.experimental.CommunicationOptions('
        'timeout_seconds=role.step_deadline_seconds)',
        ('tests/cluster/test_long_runs.py::test_tf2_collective_run_with_a_'
         'step_deadline_keeps_a_flat_thread_count',),
        'every collective of every tf2 step leaves a thread sleeping out '
        'its timeout'),
    Breakage(
        'tf2_step_without_its_deadline',
        'tf_cnn_benchmarks/cluster/task/tf2_runtime.py',
        '    if self._step_deadline is None:',
        '    if True:',
        ('tests/cluster/test_tf2_step_deadline.py::test_a_multi_worker_task_'
         'runs_its_steps_within_the_step_deadline',),
        'a tf2 step runs with no deadline at all'),
    Breakage(
        'tf2_step_deadline_never_aborts',
        'tf_cnn_benchmarks/cluster/task/tf2_step_deadline.py',
        '    self._abort(self.aborted)',
        '    pass',
        ('tests/cluster/test_tf2_step_deadline.py::test_a_step_past_the_'
         'deadline_is_aborted_once_naming_it',),
        'a tf2 step past its deadline is not aborted'),
    # --- The kill bound under every watchdog activity (issue #29).
    Breakage(
        'watchdog_waits_out_its_check',
        'tf_cnn_benchmarks/liveness/watchdog.py',
        'self._stop.is_set() or self.signal_received())), False',
        'False)), False',
        ('tests/cluster/test_faults_mid_run.py::test_sigterm_during_a_slow_'
         'watchdog_check_ends_within_the_kill_bound',),
        'a signal waits until the watchdog\'s check returns'),
    # --- What the tf2 soak trials found (issue #29).
    Breakage(
        'tf2_join_without_the_port_wait',
        'tf_cnn_benchmarks/cluster/task/tf2_runtime.py',
        '          self.wait_for_peers(peers)\n',
        '          pass\n',
        ('tests/cluster/test_failures.py::test_tf2_missing_worker_is_named_'
         'and_the_other_exits[worker1]',),
        'a tf2 worker waits for the others only inside TensorFlow\'s '
        'registration barrier, where a signal waits for its timeout'),
    Breakage(
        'tf2_step_waits_for_its_board_write',
        'tf_cnn_benchmarks/cluster/task/tf2_board.py',
        '      self._started += 1\n      self._publish(0)',
        '      self._started += 1\n      self._publish(10000)',
        ('tests/cluster/test_tf2_board.py::test_a_store_that_never_answers_'
         'holds_no_step_and_a_note_only_its_bound',),
        'a tf2 step waits for its board write, which a frozen worker 0 '
        'never answers (a CI run hung so)'),
    Breakage(
        'tf2_sigterm_left_to_tensorflows_notifier',
        'tf_cnn_benchmarks/cluster/task/tf2_runtime.py',
        '    tf2_sigterm_notice.watch(run_watch.stop_request, role.job_name,',
        '    (lambda *a: None)(run_watch.stop_request, role.job_name,',
        ('tests/cluster/test_signals_at_startup.py::test_tf2_sigterm_taken_'
         'by_tensorflows_notifier_during_the_join',),
        'a SIGTERM during the MultiWorkerMirroredStrategy join is kept by '
        'TensorFlow\'s preemption notifier and the worker trains on'),
    Breakage(
        'soak_ssh_drop_past_the_runs_bound',
        'studies/chaos_plan.py',
        '  low, high = (old + s for s in SSH_DROP_PAST_GIVE_UP_SECONDS)',
        '  low, high = (run + s for s in SSH_DROP_PAST_GIVE_UP_SECONDS)',
        ('tests/cluster/test_chaos_soak.py::test_ssh_link_drops_are_drawn_'
         'within_their_bounds',),
        "the soak's ssh link drops outlast the run's own lost-peer bound"),
    # --- Issue #29's safety fixes (RELIABILITY.md S1-S6, docs/claims.md
    # L39-L47).
    Breakage(
        'full_result_dir_raises',
        'tf_cnn_benchmarks/run/record.py',
        '  except OSError as e:\n    say(NOT_WRITTEN',
        '  except KeyError as e:\n    say(NOT_WRITTEN',
        ('tests/test_full_result_dir.py::test_a_run_that_ends_normally_keeps_'
         'its_status',),
        'a full --result_dir raises out of the record write (a traceback '
        'and exit 1; from the watchdog, a hung run)'),
    Breakage(
        'guard_token_not_checked',
        'tf_cnn_benchmarks/cluster/launch/task_processes.py',
        '    if not hmac.compare_digest(token.encode(), self.token.encode()):',
        '    if False:',
        ('tests/cluster/test_guard_lines.py::test_forged_guard_lines_are_'
         'refused_and_reported',),
        "a remote task's guard lines are believed without its token"),
    Breakage(
        'record_name_unchecked',
        'results/record_io.py',
        "  return bool(RECORD_FILE_NAME_RE.match(name)) and '..' not in name",
        '  return True',
        ('tests/cluster/test_guard_lines.py::test_guard_lines_with_the_token_'
         'still_obey_the_grammar',),
        'a record name from a guard line is joined into a path as given'),
    Breakage(
        'reap_kills_untagged_processes',
        'tf_cnn_benchmarks/cluster/launch/ssh_remote.py',
        "        if wanted in f.read().split(b'\\0'):",
        '        if True:',
        ('tests/cluster/test_guard_lines.py::test_reap_kills_only_the_task_'
         'its_guard_started',),
        "reap kills whatever process group a `started` line named"),
    Breakage(
        'peer_note_printed_raw',
        'tf_cnn_benchmarks/failures.py',
        '      c if unicodedata.category(c) not in _UNPRINTABLE else',
        '      c if True else',
        ('tests/cluster/test_guard_lines.py::test_a_peer_note_prints_as_one_'
         'line',),
        "a peer's note with a newline prints a line of its own"),
    Breakage(
        'done_signal_kind_unchecked',
        'tf_cnn_benchmarks/cluster/task/done_signals.py',
        '  if kind not in KINDS:',
        '  if False:',
        ('tests/cluster/test_done_signals.py::test_a_forged_done_signal_is_'
         'refused_and_the_real_one_ends_the_ps',),
        'a serving task reads a forged done signal as a client\'s DONE'),
    Breakage(
        'loopback_cluster_not_warned',
        'tf_cnn_benchmarks/cluster/server.py',
        '  exposed = [h for h in hosts if not _is_loopback(h)]\n',
        '  exposed = [h for h in hosts if not _is_loopback(h)]\n'
        '  if not exposed:\n    return None\n',
        ('tests/cluster/test_server_exposure.py::test_a_server_reachable_'
         'from_other_hosts_warns_once',),
        'a loopback cluster, which listens on every interface, is not '
        'warned'),
    Breakage(
        'cifar_unpickles_anything',
        'preprocessing/cifar.py',
        '    raise pickle.UnpicklingError(\n        \'refused global',
        '    return super().find_class(module, name)\n'
        '    raise pickle.UnpicklingError(\n        \'refused global',
        ('tests/preprocessing/test_synthetic_and_cifar.py::test_a_cifar_pickle_that_calls_'
         'a_function_is_refused',),
        'a CIFAR batch under --data_dir can run code when unpickled'),
    Breakage(
        'dash_host_given_to_ssh',
        'tf_cnn_benchmarks/cluster/launch/ssh_hosts.py',
        "  if m.group('name').startswith('-'):",
        '  if False:',
        ('tests/cluster/test_ssh_placement.py::test_a_host_name_starting_'
         'with_a_dash_is_refused_before_ssh_runs',),
        'a host name starting with "-" reaches ssh as an option'),
    Breakage(
        'suite_launch_table_open',
        'results/suite_file.py',
        '  refused = [key for key in launch if key not in LAUNCH_KEYS]',
        '  refused = []',
        ('tests/results/test_suite.py::test_a_launch_table_admits_only_the_'
         'local_cluster_options',),
        "a suite file's launch table passes any launcher option (ssh too)"),
    Breakage(
        'k8s_without_network_policy',
        'tf_cnn_benchmarks/cluster/launch/k8s_manifests.py',
        '          else [tfjob_object(plan)]) + [network_policy(plan)]',
        '          else [tfjob_object(plan)])',
        ('tests/cluster/test_k8s_manifests.py::test_only_the_runs_own_pods_'
         'reach_its_pods',),
        "the manifests leave the run's pods open to every pod"),
    Breakage(
        'k8s_token_mounted',
        'tf_cnn_benchmarks/cluster/launch/k8s_manifests.py',
        "          'automountServiceAccountToken': False,",
        "          'automountServiceAccountToken': True,",
        ('tests/cluster/test_k8s_manifests.py::test_pods_run_without_root_'
         'powers_and_with_limits',),
        "every pod gets the service account's token"),
    Breakage(
        'k8s_hold_swallows_sigterm',
        'tf_cnn_benchmarks/cluster/launch/k8s_manifests.py',
        "    'pid=; trap \\'stopped=1; kill -TERM $pid 2>/dev/null\\' TERM INT; '",
        "    'pid=; trap \\'stopped=1\\' TERM INT; '",
        ('tests/cluster/test_k8s_manifests.py::test_a_held_pod_forwards_'
         'sigterm_to_the_run',),
        "a held pod's shell (PID 1) keeps kubelet's SIGTERM from the run"),
    Breakage(
        'suite_credits_the_shared_folder',
        'results/runner.py',
        '  command = build_command(run, python, benchmark_script, own_dir)',
        '  command = build_command(run, python, benchmark_script, result_dir)',
        ('tests/results/test_suite.py::test_two_suites_writing_one_folder_'
         'credit_each_run_its_own_record',),
        'a run writes into the shared folder, so runs are not credited '
        'with their own records'),
    Breakage(
        'train_dir_lock_kept_on_watchdog_exit',
        'tf_cnn_benchmarks/run/train_dir_lock.py',
        '  before_exit(lock.release)',
        '  before_exit(lambda: None)',
        ('tests/test_liveness.py::test_a_second_signal_stops_at_once',),
        "the --train_dir lock stays behind when the watchdog ends a run "
        "(another host's next run refuses)"),
    Breakage(
        'done_signals_one_at_a_time',
        'tf_cnn_benchmarks/cluster/deadlines.py',
        '  for thread in threads:\n    thread.start()\n',
        '  for thread in threads:\n    thread.start()\n    thread.join()\n',
        ('tests/cluster/test_done_signals.py::test_a_cut_off_serving_task_'
         'holds_up_no_other_done_signal',),
        'done signals go to the serving tasks one at a time: a cut-off ps0 '
        'keeps ps1 from hearing a hurried exit (soak seed 7008)'),
    Breakage(
        'frozen_peer_not_asked',
        'tf_cnn_benchmarks/cluster/watch/root_cause.py',
        '    silent = reachability.frozen_peers(peers, FROZEN_ASK_SECONDS)',
        '    silent = {}',
        ('tests/cluster/test_root_cause_frozen.py::test_a_peer_frozen_'
         'throughout_the_wait_is_named_stalled',
         'tests/cluster/test_faults_mid_run.py::test_tf2_frozen_worker_is_'
         'named_from_the_coordination_service[worker0-worker1]'),
        "a secondary error from a frozen peer blames the task itself "
        "('Operation timed out.', soak seeds 7138 and 7158)"),
    Breakage(
        'frozen_peer_named_on_one_ask',
        'tf_cnn_benchmarks/cluster/watch/root_cause.py',
        '      silent = reachability.frozen_peers(\n'
        '          {label: peers[label] for label in silent}, '
        'FROZEN_ASK_SECONDS)',
        '      pass',
        ('tests/cluster/test_root_cause_frozen.py::test_a_peer_that_answers_'
         'by_the_end_of_the_wait_is_not_named',),
        'a peer slow to answer once is blamed as frozen'),
    # --- Issue #27's statistics and runner (README "How small a slowdown
    # can compare see?", docs/claims.md R56-R58, R78).
    Breakage(
        'paired_runs_judged_unpaired',
        'results/comparison.py',
        '      paired=bool(pairs))',
        '      paired=False)',
        ('tests/results/test_compare.py::test_interleaved_pairs_are_judged_'
         'by_the_paired_test',
         'tests/results/test_compare_cpu_time.py::test_interleaved_runs_are_'
         'judged_by_the_same_paired_test'),
        'interleaved pairs are judged by Mann-Whitney, blind to the pairing'),
    Breakage(
        'single_run_gets_a_verdict',
        'results/comparison.py',
        '  row.test, row.verdict, row.paired = NO_TEST, stats.INCONCLUSIVE, '
        'bool(pairs)',
        '  row.test, row.verdict, row.paired = NO_TEST, stats.REGRESSION, '
        'bool(pairs)',
        ('tests/results/test_compare.py::test_single_run_a_side_gets_no_'
         'verdict',),
        'one run a side is called a regression'),
    Breakage(
        'cluster_workers_count_as_runs',
        'results/comparison.py',
        "    cluster_id = _plain(row.get('cluster_run_id'))",
        '    cluster_id = None',
        ('tests/results/test_compare.py::test_a_cluster_run_counts_once',),
        "a cluster run's workers count as separate runs"),
    Breakage(
        'holm_gives_raw_p',
        'results/stats.py',
        '  scaled = (len(p) - np.arange(len(p))) * p[order]',
        '  scaled = p[order]',
        ('tests/results/test_stats.py::test_holm_adjusts_as_by_hand',
         'tests/results/test_stats.py::test_family_false_alarms_stay_within_'
         'alpha_with_holm'),
        'no family-wise control: each configuration at alpha'),
    Breakage(
        'verdict_from_too_few_runs',
        'results/stats.py',
        '  if smallest_possible_p >= alpha:',
        '  if False:',
        ('tests/results/test_stats.py::test_too_few_runs_is_inconclusive',),
        'runs too few to reach p < alpha get a verdict'),
    Breakage(
        'sides_not_balanced',
        'results/runner.py',
        '    runs.extend(this_round if (first_round + position) % 2 == 0\n'
        '                else this_round[::-1])',
        '    runs.extend(this_round)',
        ('tests/results/test_quiet_runs.py::test_two_sides_take_turns_in_a_'
         'balanced_order',),
        'the sides run A B, A B, ... (a drift favours one)'),
    Breakage(
        'top_up_restarts_the_order',
        'results/bisect/command.py',
        '    return runner.interleave(plans, first_round=min(\n'
        '        (made[one.config] for one in group), default=0))',
        '    return runner.interleave(plans)',
        ('tests/results/test_bisect.py::test_a_top_up_goes_on_alternating_'
         'the_order',),
        "bisect's top-up after an odd count runs A B twice in a row"),
    Breakage(
        'bisect_reruns_reported_only_on_failure',
        'results/bisect/command.py',
        '      if runner.anything_to_report(outcomes):',
        '      if any(not o.ok for o in outcomes):',
        ('tests/results/test_bisect.py::test_a_step_with_a_run_run_again_'
         'says_so_though_none_failed',),
        'bisect says nothing of runs run again unless a run failed'),
    Breakage(
        'kept_disturbed_run_unnamed',
        'results/comparison.py',
        "                           quiet_runs.disturbed_note('candidate', "
        "sides[1]),\n",
        '',
        ('tests/results/test_quiet_runs.py::test_a_run_still_disturbed_after_'
         'its_last_try_is_kept_and_named',),
        "compare's table says nothing of candidate runs kept though other "
        'processes shared the CPU'),
    Breakage(
        'reruns_unbounded_count_as_runs',
        'results/runner.py',
        "            len(rerun), sum(o.reruns for o in rerun),",
        "            sum(o.reruns for o in rerun), len(rerun),",
        ('tests/results/test_quiet_runs.py::test_a_run_still_disturbed_after_'
         'its_last_try_is_kept_and_named',),
        'the report counts the tries set aside as the runs run again'),
    Breakage(
        'target_seconds_ignored_silently',
        'results/runner.py',
        "      print('calibration of %s: none, its flags set --num_batches (which '",
        "      print('' and 'calibration of %s: none, its flags set --num_batches (which '",
        ('tests/results/test_quiet_runs.py::test_flags_that_set_the_length_'
         'are_not_calibrated',),
        '--target_seconds is dropped without a word when the flags set '
        '--num_batches'),
    Breakage(
        'suite_false_alarm_goal_unjudged',
        'studies/power_figures.py',
        "      'goals': {'family_false_alarms_met': false_alarms_met(family),",
        "      'goals': {'family_false_alarms_met': True,",
        ('tests/results/test_power_study.py::test_the_false_alarm_goal_asks_'
         'the_upper_end_and_says_what_shows_it',),
        "the suite's family-wise false-alarm goal is called met unjudged"),
    Breakage(
        'alarms_seen_left_out_of_trials_to_show',
        'studies/power_figures.py',
        "  return max((p['count'] for p in by_n.values() if p is not None),",
        "  return 0 and max((p['count'] for p in by_n.values() if p is not None),",
        ('tests/results/test_power_study.py::test_the_false_alarm_goal_asks_'
         'the_upper_end_and_says_what_shows_it',),
        'the trials that would show the false-alarm goal are counted as if '
        'no trial so far had cried wolf'),
    Breakage(
        'run_length_not_calibrated',
        'results/quiet_runs.py',
        "    return bool(self.target_seconds) and not _sets(flag_args, "
        "'num_batches')",
        '    return False',
        ('tests/results/test_quiet_runs.py::test_the_run_length_is_'
         'calibrated_to_the_target',),
        '--target_seconds calibrates nothing'),
    Breakage(
        'longer_variants_not_longer',
        'studies/noise_sources.py',
        "                                 folder, args.target_seconds), folder,",
        "                                 folder), folder,",
        ('tests/results/test_noise_sources.py::test_the_study_hands_its_'
         'target_to_the_plan_and_the_runner',),
        "noise_sources' runs_2x and runs_4x run the default's length"),
    Breakage(
        'own_run_length_carried_on',
        'results/runner.py',
        "    own = (noise if run.target_seconds is None else",
        "    own = noise = (noise if run.target_seconds is None else",
        ('tests/results/test_quiet_runs.py::test_a_run_of_its_own_length_is_'
         'calibrated_to_it_alone',),
        "a run's own --target_seconds (noise_sources' runs_4x) is carried on "
        'to the runs after it'),
    Breakage(
        'nchw_refused_whatever_onednn',
        'tf_cnn_benchmarks/config/run_config.py',
        "  if environment.tf_build()['onednn'] is not False:\n    return\n",
        '',
        ('tests/test_driver.py::test_nchw_on_a_cpu_without_onednn_is_'
         'refused_before_anything_runs',),
        'NCHW on a CPU is refused even with oneDNN on'),
    Breakage(
        'nchw_without_onednn_not_refused',
        'tf_cnn_benchmarks/config/run_config.py',
        "    _refuse_nchw_without_onednn()\n",
        "    pass\n",
        ('tests/test_driver.py::test_nchw_on_a_cpu_without_onednn_is_'
         'refused_before_anything_runs',),
        'NCHW on a CPU without oneDNN fails at its first step instead'),
    Breakage(
        'aux_head_pools_nchw_as_nhwc',
        'models/inception.py',
        'x = b.avg_pool(x, 5, 3)',
        "x = tf.nn.avg_pool2d(x, 5, 3, 'VALID')",
        ('tests/models/test_inception.py::test_inception3_aux_head_trains_'
         'in_nchw',),
        "inception3's aux head pools an NCHW map as NHWC (its shapes and "
        'losses still come out right)'),
    Breakage(
        'flatten_in_nchw_order',
        'models/layers.py',
        "if len(x.shape) == 4 and self.data_format == 'NCHW':",
        'if False:',
        ('tests/models/test_classic.py::test_lenet_same_logits_in_nchw_and_'
         'nhwc',),
        'an NCHW map is flattened in NCHW order, so the dense weights read '
        "features in another order than NHWC's (shapes and counts unchanged)"),
    Breakage(
        'cpu_metric_higher_is_better',
        'results/comparison.py',
        "           'cpu_seconds_per_image': ('CPU s/image', False),",
        "           'cpu_seconds_per_image': ('CPU s/image', True),",
        ('tests/results/test_compare_cpu_time.py::test_more_cpu_per_image_is_'
         'the_regression',),
        'compare --metric cpu_seconds_per_image calls more CPU per image an '
        'improvement'),
    Breakage(
        'power_rates_of_few_trials_plan',
        'results/detection_power.py',
        "  if share is None or share.get('trials', 0) < MIN_TRIALS:",
        '  if share is None:',
        ('tests/results/test_detection_power.py::test_a_rate_of_few_trials_'
         'plans_nothing',),
        'bisect plans by a power rate measured on 6 trials'),
    Breakage(
        'runner_preloads_tcmalloc',
        'results/runner.py',
        '  env.update(run.env)\n',
        "  env.update(run.env)\n  env['LD_PRELOAD'] = 'libtcmalloc_minimal.so.4'\n",
        ('tests/results/test_quiet_runs.py::test_runs_keep_the_system_'
         'allocator',),
        'every run has tcmalloc preloaded (README: the runner keeps the '
        'system allocator)'),
    Breakage(
        'tensorflow_loads_keras',
        'tf_cnn_benchmarks/process/keras_skip.py',
        '    if name in EAGER_KERAS_MODULES:',
        '    if False:',
        (_DRIVER + 'test_tensorflow_loads_without_keras_which_'
         'still_loads_when_used',),
        "every process's start loads Keras, 0.85 s it never uses"),
    Breakage(
        'conftest_loads_keras',
        'tests/conftest.py',
        'with keras_skip.skipping_keras_eager_load():',
        'if keras_skip:',
        (_DRIVER + 'test_pytest_processes_load_tensorflow_without_keras_'
         'too',),
        'every pytest process (one per breakage in this check) loads Keras'),
    Breakage(
        'watchdog_waits_out_its_tick',
        'tf_cnn_benchmarks/liveness/watchdog.py',
        '    self.stop_request.wake()\n',
        '',
        ('tests/test_liveness.py::test_a_run_ends_without_waiting_out_the_'
         'watchdogs_tick',),
        "a run's end waits for the watchdog's next tick (up to a second a "
        'run)'),
    Breakage(
        'compute_phase_not_niced',
        'tests/run_suite.py',
        "('compute', compute_cmd, 19)",
        "('compute', compute_cmd, 0)",
        ('tests/test_run_suite.py::test_each_phase_runs_its_tests_the_'
         'compute_one_niced',),
        'the in-process tests compete with the timed ones for the CPU '
        '(README: nice 19, in the CPU the timed ones leave idle)'),
    Breakage(
        'quiet_phase_beside_the_others',
        'tests/run_suite.py',
        "  codes[name] = subprocess.call(command, cwd=cwd)\n",
        "  codes[name] = 0\n",
        ('tests/test_run_suite.py::test_a_failure_in_any_phase_fails_the_'
         'run',),
        "the quiet phase's tests do not run, or their failure passes "
        '(README: then the results runner\'s real runs alone)'),
    Breakage(
        'compute_phase_hang_guards_unraised',
        'tests/run_suite.py',
        "['-p', 'tests.niced_timeouts']",
        '[]',
        ('tests/test_run_suite.py::test_the_compute_phase_raises_its_hang_'
         'guards_to_the_suites_default',),
        'a niced in-process test fails its own hang guard for the CPU the '
        'timed ones took (CI at 3cf2e9d: a 2 s test past its 60 s)'),
    Breakage(
        'niced_wall_bounds_unraised',
        'tests/niced_timeouts.py',
        '  return max(seconds, _raised_to)\n',
        '  return seconds\n',
        ('tests/test_run_suite.py::test_the_compute_phase_raises_its_hang_'
         'guards_to_the_suites_default',),
        "a niced test's bounds (its own guard, a child's timeout, a "
        'deadline) stand as written though its wall time is mostly others\''),
    Breakage(
        'any_failure_taken_for_a_refused_copy',
        'tests/cluster/helpers.py',
        '  return bool(failures) and all(\n',
        '  return bool(failures) or all(\n',
        ('tests/cluster/test_step_repeats.py::test_a_run_ended_by_a_'
         'refused_copy_only_when_every_failure_is_one',),
        'a straggler cluster that failed for any reason is run again as if '
        'TensorFlow had refused a step as a copy'),
    Breakage(
        'refused_copy_reruns_unbounded',
        'tests/cluster/test_stragglers.py',
        '    if (code != exit_codes.OK and not refused and\n',
        '    if (code != exit_codes.OK and\n',
        ('tests/cluster/test_stragglers.py::test_a_cluster_a_refused_'
         'copy_ended_is_run_again_once',),
        'a straggler cluster that refused copies keep ending is run again '
        'and again'),
)
