"""Trajectories of tool-using agents (issues 54 and 66): the record, the layouts it is
read from (fbi's, OpenAI's, Anthropic's, τ-bench's results, OpenTelemetry and
OpenInference traces), what the tools declare (side effects, asking the user) and where
the user approved, how a judge reads one, and the built-in sample of gold
trajectories."""

from fbi.trajectories._effects import (
    TAU_BENCH_WRITE_TOOLS,
    Confirmation,
    ToolOverrides,
    confirmations,
)
from fbi.trajectories._model import (
    TRAJECTORY_SCHEMA_VERSION,
    Step,
    Tool,
    ToolCall,
    Trajectory,
    TrajectoryError,
)
from fbi.trajectories._read import gold_only, read_trajectories, trajectory_of
from fbi.trajectories._render import (
    RENDER_VERSION,
    RenderedStep,
    StepChange,
    Window,
    changed_step,
    into_tool_result,
    render,
    render_step,
    rendered_steps,
    step_changes,
    task_text,
    windowed,
)
from fbi.trajectories._sample import sample_records, sample_trajectories
