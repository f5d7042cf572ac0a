"""The runtime's part for a session under test, done at once and without a model.

Each submitted segment is prepared by the simulation's stand-in engine (``SimEngine``) and
rendered whole in one window (a takeover from where it switches in, as the scheduler would pick
when its lead has been rendered to its end), a closed stream is drained, a cancelled one gets
nothing more, and the encoder steps run here; every result is fed back at the time given. A
context that was ended thus finishes with its audio sent: its listener's clock runs from then.
"""

from __future__ import annotations

from tests.support.simulation import SimEngine
from voxflow.connection.local import drain_encoded
from voxflow.engines.base import Utterance
from voxflow.runtime.handover import choose_switch
from voxflow.runtime.jobs import Drained, Prepared, Rendered
from voxflow.session.events import CancelStream, CloseStream, Output, SubmitSegment
from voxflow.session.session import Session

__all__ = ["InstantRuntime"]


class InstantRuntime:
    """Serves one session's streams at once (see the module docstring)."""

    def __init__(self, session: Session, engine: SimEngine | None = None) -> None:
        self.session = session
        self._engine = engine or SimEngine()
        self._utterances: dict[tuple[int, int], Utterance] = {}  # (serial, tag)
        self._cancelled: set[int] = set()

    def serve(self, now: float) -> list[Output]:
        """Answer everything the session asked for until it asks for nothing more; returns its
        outputs in order (encoder steps already run)."""
        out: list[Output] = []
        while outputs := drain_encoded(self.session, lambda: now):
            out.extend(outputs)
            for output in outputs:
                if isinstance(output, CancelStream):
                    self._cancelled.add(output.serial)
                elif isinstance(output, SubmitSegment) and output.serial not in self._cancelled:
                    self._render(output, now)
                elif isinstance(output, CloseStream) and output.serial not in self._cancelled:
                    self.session.synthesis_event(output.serial, Drained(), now)
        return out

    def _render(self, submit: SubmitSegment, now: float) -> None:
        request, serial = submit.request, submit.serial
        utterance = self._engine.utterance(request.text)
        self._utterances[(serial, request.tag)] = utterance
        self.session.synthesis_event(serial, Prepared(request.tag, utterance, 0.01), now)
        start = 0
        if request.takeover is not None:
            lead = self._utterances[(serial, request.takeover.lead_tag)]
            points = request.takeover.points
            start = choose_switch(lead, utterance, points, lead.num_frames).start
        audio = self._engine.render(utterance, start, utterance.num_frames)
        window = Rendered(
            request.tag, start, utterance.num_frames, audio, True, 0.01, 0.0, first=True
        )
        self.session.synthesis_event(serial, window, now)
