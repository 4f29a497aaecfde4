"""A stand-in judge that ships with fbi, as Inspect ships ``mockllm``: an OpenAI-protocol
server on this machine (`fbi stand-in`) that answers every prompt fbi sends — a judge's,
a perturber's (answers and trajectories), a QA model's, an explanation checker's — in
the shape the prompt asks for, deterministically (a hash of the prompt), with no model
behind it. It lets every guide run as written, offline, and makes a plumbing check of a
pipeline quick; its verdicts mean nothing."""

from fbi.standin._replies import qa_reply, reply_text, trajectory_reply, verdict_reply
from fbi.standin._server import StandIn, chat_completion
