# Ready jobs go out at once on SLURM, whatever --jobs a site needs.
#
# The slurm executor plugin (2.8.0, pinned in requirements.txt) holds back the ready jobs of an
# array rule until a whole chunk (slurm-array-limit) or every eligible job of the rule is ready,
# but Snakemake counts the held jobs as running and never offers them again: with --jobs below a
# rule's jobs, or jobs that become ready a few at a time (score after extract), the queue stays
# empty and the run waits forever (the plugin's issue #473). Here the ready jobs of a rule go out
# in one sbatch as an array where two or more are ready and the profile makes the rule an array
# rule, else each as a plain job. Every Snakemake process imports the plugin (the executor
# registry imports each installed one), but only the head's slurm executor calls run_jobs: a
# job's own Snakemake runs it with the jobstep or local executor.
import asyncio as _asyncio
import sys as _sys

_slurm_plugin = _sys.modules.get("snakemake_executor_plugin_slurm")
if _slurm_plugin is not None:
    _executor = _slurm_plugin.Executor
    if not all(hasattr(_executor, name) for name in ("run_jobs", "_submit_job", "_submit_array_jobs", "sleep",
                                                      "cancel_jobs")):
        raise WorkflowError(
            "rules/slurm.smk: this snakemake-executor-plugin-slurm has no run_jobs/_submit_job/_submit_array_jobs/"
            "sleep/cancel_jobs; install the version pinned in requirements.txt"
        )

    def _submit_every_ready_job(self, jobs):
        if self._main_event_loop is None:  # as the plugin's own run_jobs: its submissions run on this loop
            try:
                self._main_event_loop = _asyncio.get_running_loop()
            except RuntimeError:
                self._main_event_loop = None
        ready_by_rule = {}
        for job in jobs:
            if job.is_group():  # a group job cannot be an array task
                self._submit_job(job)
            else:
                ready_by_rule.setdefault(job.rule.name, []).append(job)
        for rule_name, ready in ready_by_rule.items():
            as_array = "all" in self.array_jobs or rule_name in self.array_jobs
            if as_array and len(ready) > 1 and self.max_array_size >= 2:
                self._submit_array_jobs(ready)
            else:
                for job in ready:
                    self._submit_job(job)

    _executor.run_jobs = _submit_every_ready_job

    # The plugin backs its status checks off by 10 s after each check that finds no job finished, up
    # to 180 s, whatever --seconds-between-status-checks says: every step of a chain of short jobs
    # (select, train_tokenizer, tokenize, write_shards, manifest, report) then waited up to minutes
    # for the head to notice its input was done. The backoff stops at the set interval.
    async def _sleep_at_most_the_set_interval(self):
        set_interval = self.workflow.remote_execution_settings.seconds_between_status_checks
        await _asyncio.sleep(min(self.next_seconds_between_status_checks, set_interval))

    _executor.sleep = _sleep_at_most_the_set_interval

    # SIGTERM (scancel of the head job, its time limit, `kill` on a login node) makes Snakemake drain:
    # submit nothing more and wait for the running jobs, hours of them, while SLURM sends SIGKILL
    # KillWait (30 s) later, so the jobs ran on, billed, for a head that would never record them. A
    # head on the slurm executor takes SIGTERM as Ctrl-C instead: it scancels every job of its run
    # and exits, and `--rerun-incomplete` picks up from there. A local run still drains its jobs.
    # The handler only marks the run as cancelled and wakes the scheduler, whose loop raises the
    # interrupt where it next looks for finished jobs: raised in the handler itself, it could land
    # inside one of the head's writes to .snakemake/metadata.db and leave that write's transaction
    # open, so that the head could not release its lock (CI, 2026-12-06: "database is locked").
    from snakemake.scheduling.job_scheduler import JobScheduler as _JobScheduler

    if not all(hasattr(_JobScheduler, name) for name in ("exit_gracefully", "_finish_jobs")):
        raise WorkflowError("rules/slurm.smk: this Snakemake's JobScheduler has no exit_gracefully/_finish_jobs; "
                            "install the version pinned in requirements.txt")
    _drain_running_jobs = _JobScheduler.exit_gracefully
    _finish_jobs = _JobScheduler._finish_jobs

    def _cancel_the_runs_jobs_on_sigterm(self, *args):
        if isinstance(self._executor, _executor):
            self._cancel_on_user_request = True
            self._open_jobs.release()
            return
        _drain_running_jobs(self, *args)

    # The head's own local shell jobs (carve_evalsets, holdout_manifest, rulegraph) are not SLURM's
    # to cancel, and Snakemake's Ctrl-C path leaves them to the terminal's SIGINT: a head told to
    # stop by `kill` (a login node) waited for them before exiting, a rulegraph's whole Snakemake
    # parse among them (the test cluster: 6 s, and 29 s on a loaded machine, of the 30 s KillWait).
    # They are stopped with it, each command with the processes it started (as scancel of a head job
    # stops every process of the job); what they leave is incomplete, as a cancelled job's is.
    from snakemake.shell import shell as _shell
    import psutil as _psutil

    if not all(hasattr(_shell, name) for name in ("_lock", "_processes")):
        raise WorkflowError("rules/slurm.smk: this Snakemake's shell has no _lock/_processes; install the version "
                            "pinned in requirements.txt")

    def _terminate_local_jobs():
        with _shell._lock:
            commands = list(_shell._processes.values())
        processes = []
        for command in commands:
            try:
                top = _psutil.Process(command.pid)
                processes += [top, *top.children(recursive=True)]
            except _psutil.NoSuchProcess:
                continue
        for process in processes:
            try:
                process.terminate()
            except _psutil.NoSuchProcess:
                pass

    def _finish_jobs_unless_cancelled(self):
        if getattr(self, "_cancel_on_user_request", False):
            _terminate_local_jobs()
            raise KeyboardInterrupt  # the scheduler's own Ctrl-C path: cancel_jobs (scancel), then exit
        _finish_jobs(self)

    _JobScheduler.exit_gracefully = _cancel_the_runs_jobs_on_sigterm
    _JobScheduler._finish_jobs = _finish_jobs_unless_cancelled

    # The cancel scancels the executor's active jobs, but its status thread takes them out of that
    # list for every check (squeue) and puts the running ones back after: a cancel during a check
    # found none, and the run's jobs ran on (CI, 2026-12-06: a head terminated 3 s into its run with
    # status checks every second). Every job of the run carries the run's ID as its SLURM name
    # (`scancel --name`, as the README says), so the cancel also cancels by that name.
    import subprocess as _subprocess

    _cancel_active_jobs = _executor.cancel_jobs

    def _cancel_every_job_of_the_run(self, active_jobs):
        _cancel_active_jobs(self, active_jobs)
        cancelled = _subprocess.run(["scancel", "--name", self.run_uuid], capture_output=True, text=True)
        if cancelled.returncode != 0:
            self.logger.warning(f"scancel --name {self.run_uuid}: {cancelled.stderr.strip()}")

    _executor.cancel_jobs = _cancel_every_job_of_the_run

    # The head then releases its lock in .snakemake/metadata.db. SQLite answers "database is locked"
    # while another connection writes: the head's own `run:` jobs (threads) and its cancelled jobs'
    # Snakemake record their end in the same file, and a head terminated seconds into its run met
    # that (CI, 2026-12-06) and left its lock, so the next run needed --unlock. The release is
    # retried until the file is free, within SLURM's KillWait (30 s) after SIGTERM.
    import time as _time
    from snakemake.persistence.db import DbPersistence as _DbPersistence
    from sqlalchemy.exc import OperationalError as _OperationalError

    if not hasattr(_DbPersistence, "_delete_locks"):
        raise WorkflowError("rules/slurm.smk: this Snakemake's DbPersistence has no _delete_locks; "
                            "install the version pinned in requirements.txt")
    _delete_locks_once = _DbPersistence._delete_locks
    _RELEASE_PATIENCE_S = 12  # with SQLite's own 10 s wait in the last try, the head exits within KillWait

    def _delete_locks_once_the_file_is_free(self):
        deadline = _time.monotonic() + _RELEASE_PATIENCE_S
        while True:
            try:
                return _delete_locks_once(self)
            except _OperationalError as error:
                if "database is locked" not in str(error) or _time.monotonic() > deadline:
                    raise
                _time.sleep(0.5)

    _DbPersistence._delete_locks = _delete_locks_once_the_file_is_free
