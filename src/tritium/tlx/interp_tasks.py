"""Execution model behind the TLX interpreter: per-task state, blocking waits and warp specialization.

Triton's interpreter runs one program at a time as plain Python. TLX adds two things that plain
sequential execution cannot express:

* per-"thread" asynchronous state (cp.async groups), which must not leak from one program into the
  next, and
* warp-specialized regions (``async_tasks``/``async_task``) whose tasks hand data to each other
  through mbarriers. A producer filling a ring of NUM_STAGES buffers cannot run to completion
  before its consumer starts, so tasks run as cooperative threads: exactly one runs at a time, and
  a task yields only when a ``barrier_wait`` cannot complete yet. When no task can make progress
  the scheduler raises :class:`TLXDeadlockError` instead of hanging.

A ``with async_task(...)`` body cannot be re-run or moved to another thread by a context manager,
so ``async_tasks().__enter__`` reads the kernel's source, compiles every task body into a function
of the kernel's locals (applying the interpreter's own AST rewrite), runs them all, and then skips
the original ``with`` body by making the first ``async_task().__enter__`` raise a marker exception
that ``async_tasks().__exit__`` swallows.
"""
from __future__ import annotations

import ast
import copy
import functools
import linecache
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from . import triton_compat
from .tasks import check_tasks, region_config, task_config
from .triton_compat import ASTTransformer, interpreter_program


class TLXDeadlockError(RuntimeError):
    """A ``barrier_wait`` can never complete: no task left could arrive on the barrier."""


class _Aborted(BaseException):
    """Unwinds a blocked task after another task failed (BaseException: kernels catch Exception)."""


class _TasksAlreadyRun(Exception):
    """Raised by ``async_task().__enter__`` to skip the task bodies ``async_tasks`` already ran."""


@dataclass
class TaskContext:
    """Asynchronous state of one executing thread of control (a program, or one task replica)."""

    program: object
    replica_id: int = 0
    worker: Optional["_Worker"] = None
    open_copies: list = field(default_factory=list)
    num_warps: Optional[int] = None  # warps of this task; None: the kernel's (see interpreter.named_barrier_wait)
    groups: list = field(default_factory=list)


_tls = threading.local()


def current_context() -> TaskContext:
    """The calling task's context; a fresh one whenever the interpreter moved to a new program.

    The interpreter's ``set_grid_idx`` stores a new tuple per program, so identity of
    ``interpreter_builder.grid_idx`` (kept alive by the context) tells programs apart even when two
    launches reuse the same grid index.
    """
    program = interpreter_program()
    ctx = getattr(_tls, "ctx", None)
    if ctx is None or ctx.program is not program:
        ctx = _tls.ctx = TaskContext(program)
    return ctx


def wait_until(ready: Callable[[], bool], describe: Callable[[], str]) -> None:
    """Block the calling task until ``ready()``; raise :class:`TLXDeadlockError` if it never can be."""
    if ready():
        return
    worker = current_context().worker
    if worker is None:
        raise TLXDeadlockError(f"TLX interpreter deadlock: {describe()}, and no other async task can run")
    worker.scheduler.block(worker, ready, describe)


@dataclass
class _Worker:
    name: str
    replica_id: int
    body: Callable[[], None]
    scheduler: "_Scheduler"
    num_warps: Optional[int] = None
    done: bool = False
    waiting: Optional[tuple] = None  # (ready, describe) while blocked in wait_until


class _Scheduler:
    """Runs task bodies as threads of which exactly one runs at a time (a baton is passed on)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._workers: list[_Worker] = []
        self._current: Optional[_Worker] = None
        self._failure: Optional[BaseException] = None

    def add(self, name: str, replica_id: int, body: Callable[[], None], num_warps: Optional[int] = None) -> None:
        self._workers.append(_Worker(name, replica_id, body, self, num_warps))

    def total_warps(self) -> int:
        """Warps of all the region's task replicas: the threads of the whole CTA."""
        return sum(w.num_warps or 0 for w in self._workers)

    def run(self, program: object) -> None:
        threads = [threading.Thread(target=self._main, args=(w, program), daemon=True) for w in self._workers]
        for thread in threads:
            thread.start()
        with self._cv:
            self._current = self._workers[0]
            self._cv.notify_all()
            self._cv.wait_for(lambda: self._failure is not None or all(w.done for w in self._workers))
        for thread in threads:
            thread.join()
        if self._failure is not None:
            raise self._failure

    def block(self, worker: _Worker, ready: Callable[[], bool], describe: Callable[[], str]) -> None:
        with self._cv:
            worker.waiting = (ready, describe)
            self._pass_baton(worker)
            self._wait_for_turn(worker)
            worker.waiting = None

    def _main(self, worker: _Worker, program: object) -> None:
        _tls.ctx = TaskContext(program, worker.replica_id, worker, num_warps=worker.num_warps)
        try:
            with self._cv:
                self._wait_for_turn(worker)
            worker.body()
        except _Aborted:
            return
        except BaseException as exc:  # noqa: BLE001 - re-raised by run() in the kernel's thread
            with self._cv:
                self._failure = self._failure or exc
                self._cv.notify_all()
            return
        with self._cv:
            worker.done = True
            if not all(w.done for w in self._workers):
                self._pass_baton(worker)
            self._cv.notify_all()

    def _wait_for_turn(self, worker: _Worker) -> None:
        self._cv.wait_for(lambda: self._current is worker or self._failure is not None)
        if self._failure is not None:
            raise _Aborted()

    def _pass_baton(self, worker: _Worker) -> None:
        """Hand over to the next runnable task after ``worker`` (round robin), or fail on deadlock."""
        start = self._workers.index(worker) + 1
        for cand in self._workers[start:] + self._workers[:start]:
            if not cand.done and (cand.waiting is None or cand.waiting[0]()):
                self._current = cand
                self._cv.notify_all()
                return
        blocked = "; ".join(f"task {w.name!r} replica {w.replica_id}: {w.waiting[1]()}" for w in self._workers
                            if not w.done)
        self._failure = TLXDeadlockError(f"TLX interpreter deadlock: every async task is blocked ({blocked})")
        self._cv.notify_all()


class AsyncTask:
    """One ``with async_task(...)`` region; only its configuration is used (see module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.config = task_config(args, **kwargs)
        self.name = "default" if self.config.default else None
        self.replicate = self.config.replicate

    def __enter__(self) -> None:
        raise _TasksAlreadyRun()

    def __exit__(self, *exc: Any) -> bool:
        return False


class AsyncTasks:
    """``with async_tasks(...):``: runs every task replica cooperatively, then skips the region body."""

    def __init__(self, **kwargs: Any) -> None:
        self.config = region_config(**kwargs)

    def __enter__(self) -> None:
        frame, with_node = _find_region(sys._getframe(1))
        kernel_locals = dict(frame.f_locals)
        scheduler = _Scheduler()
        tasks = []
        for guards, config_code, body_code in _compile_tasks(frame.f_code.co_filename, with_node,
                                                              tuple(kernel_locals)):
            if all(bool(eval(cond, frame.f_globals, kernel_locals)) == branch for cond, branch in guards):
                tasks.append((eval(config_code, frame.f_globals, kernel_locals), body_code))
        check_tasks([task.config for task, _ in tasks], triton_compat.interpreter_num_warps())
        for index, (task, body_code) in enumerate(tasks):
            namespace: dict = {}
            exec(body_code, frame.f_globals, namespace)
            body = functools.partial(namespace["_tlx_async_task"], **kernel_locals)
            for replica in range(task.replicate):
                scheduler.add(task.name or f"task{index}", replica, body,
                              task.config.num_warps or triton_compat.interpreter_num_warps())
        scheduler.run(current_context().program)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        return exc_type is _TasksAlreadyRun


def _is_call_to(node: ast.expr, name: str) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Attribute) and func.attr == name) or (isinstance(func, ast.Name) and func.id == name)


@functools.lru_cache(maxsize=None)
def _parse(source: str) -> ast.Module:
    return ast.parse(source)


def _find_region(frame: Any) -> tuple[Any, ast.With]:
    """Walk up to the kernel frame executing ``with ...async_tasks():`` and return its AST node."""
    while frame is not None:
        lines = linecache.getlines(frame.f_code.co_filename)
        if lines:
            for node in ast.walk(_parse("".join(lines))):
                if (isinstance(node, ast.With) and any(_is_call_to(i.context_expr, "async_tasks") for i in node.items)
                        and node.lineno <= frame.f_lineno < node.body[0].lineno):
                    return frame, node
        frame = frame.f_back
    raise RuntimeError("async_tasks: cannot find the kernel source of the `with async_tasks():` region; "
                       "the TLX interpreter needs kernels defined in source files")


def _guarded_tasks(filename: str, stmts: list[ast.stmt], guards: tuple) -> Iterator[tuple[tuple, ast.With]]:
    """The ``with async_task`` statements of a region body, each with the ``if`` conditions that select it
    (the fork allows compile-time ``if`` guards around tasks): ((condition code, branch taken), ...)."""
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            cond = compile(ast.Expression(stmt.test), filename, "eval")
            yield from _guarded_tasks(filename, stmt.body, guards + ((cond, True), ))
            yield from _guarded_tasks(filename, stmt.orelse, guards + ((cond, False), ))
        elif (isinstance(stmt, ast.With) and len(stmt.items) == 1
              and _is_call_to(stmt.items[0].context_expr, "async_task")):
            yield guards, stmt
        else:
            raise SyntaxError(f"{filename}:{stmt.lineno}: only `with async_task(...):` blocks, or `if` statements "
                              "around them, may appear directly inside `with async_tasks():`")


@functools.lru_cache(maxsize=None)
def _compile_tasks(filename: str, region: ast.With, params: tuple[str, ...]) -> list[tuple[tuple, Any, Any]]:
    """Compile each task of a region into (guards, config expression, body function over the kernel's locals)."""
    tasks = []
    for guards, stmt in _guarded_tasks(filename, region.body, ()):
        config = compile(ast.Expression(stmt.items[0].context_expr), filename, "eval")
        fn = ast.parse(f"def _tlx_async_task({', '.join(params)}): pass").body[0]  # portable across ast versions
        fn.body = copy.deepcopy(stmt.body)
        module = ast.Module(body=[ast.copy_location(fn, stmt)], type_ignores=[])
        module = ASTTransformer().visit(module)
        tasks.append((guards, config, compile(ast.fix_missing_locations(module), filename, "exec")))
    return tasks
