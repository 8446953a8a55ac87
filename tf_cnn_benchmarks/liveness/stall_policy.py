"""When a stalled run is reported, reported again, or ended.

One policy for a single process and every task of a cluster: the first
report comes once the run has made no progress for --stall_timeout. With
--stall_shutdown_timeout the run ends ("stalled", exit 3) that long after
the report; without one (0) nobody ends the run and the report is repeated
every --stall_timeout.
"""

REPORT, END = 'report', 'end'


def next_action(now, reported_at, stall_timeout, shutdown_timeout):
  """What a run stalled for --stall_timeout does now: REPORT, END or None
  (wait)."""
  if reported_at is None or (not shutdown_timeout and
                             now - reported_at >= stall_timeout):
    return REPORT
  if shutdown_timeout and now - reported_at >= shutdown_timeout:
    return END
  return None


def shutdown_line(shutdown_timeout, what):
  """The report's last line: what happens next."""
  if not shutdown_timeout:
    return '  report only (--stall_shutdown_timeout=0): still waiting'
  return ('  exiting in %.0f s (--stall_shutdown_timeout) unless the %s '
          'moves' % (shutdown_timeout, what))
