"""What the model sees, as token ids.

Messages come from the trainer's scaffold (``bare@2`` of `harness.policies.scaffold`: the
system message holds the suite's instructions, each observation is a user message, each
action an assistant message; the same parser reads replies in training and in `harness run`);
the model's chat template (shipped inside every checkpoint, so an evaluation renders prompts
exactly as training did) turns messages into text. The model answers with the action text
and its end-of-turn token.

`Tokenization` binds a tokenizer and gives token ids: a step-wise prompt (instructions, the
last K steps, the observation), the ids that follow the model's own end-of-turn token in a
whole-episode context (the next observation turn), SFT targets, and decoding. Sampled ids
are never re-tokenised: text is derived from them, the context grows by exactly them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["COMPACT_TEMPLATE", "Tokenization"]

COMPACT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'assistant' %}"
    "{{ message['content'] }}<|im_end|>{% else %}{{ message['content'] }}\n{% endif %}"
    "{% endfor %}"
)
"""A chat template without role markers (one line per message, the assistant's turn ended by
``<|im_end|>``): the shortest prompt for tiny byte-level models. Set by
``model.chat_template = "compact"``; it is saved with the checkpoint."""


class Tokenization:
    """Token ids of prompts, observation turns and replies for one tokenizer."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.eos_id = int(tokenizer.eos_token_id)
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None
                          else tokenizer.eos_token_id)
        self._turn_prefix, self._turn_suffix = self._observation_turn_frame()

    def _render(self, messages: list[dict[str, str]], generation: bool) -> str:
        return self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                  add_generation_prompt=generation)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False).input_ids)

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        """Ids of a prompt ending where the model starts its reply."""
        return self.encode(self._render(messages, generation=True))

    def _observation_turn_frame(self) -> tuple[str, str]:
        """The template text around a user message that follows an assistant turn: what
        comes after the end-of-turn token, and what comes after the user's content."""
        marker, content = "\x00OBS\x00", "x"
        base = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": content}]
        before = self._render(base, generation=False)
        after = self._render(base + [{"role": "user", "content": marker}], generation=True)
        if not after.startswith(before):
            before = before.rstrip()
        delta = after[len(before):]
        eos = self.tokenizer.eos_token
        tail = before[before.rindex(eos) + len(eos):] if eos and eos in before else ""
        prefix, _, suffix = delta.partition(marker)
        return tail + prefix, suffix

    def observation_turn_ids(self, observation: str) -> list[int]:
        """Ids appended to a whole-episode context after the model's end-of-turn token: the
        next observation as a user turn, up to where the model replies again."""
        return self.encode(f"{self._turn_prefix}{observation}{self._turn_suffix}")

    def reply_ids(self, action: str) -> list[int]:
        """SFT target ids of an action: its text and the end-of-turn token."""
        return self.encode(action) + [self.eos_id]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of sampled ids, without the end-of-turn token."""
        ids = [int(i) for i in ids if int(i) != self.eos_id]
        return self.tokenizer.decode(ids, skip_special_tokens=True)
