"""The command queue: priorities, FIFO, change notification, the §13.2 turn filter, messages."""

from codeloop.loop.queue import (CommandQueue, Priority, QueuedCommand, QueueMode,
                                  commands_for_turn, queued_command_message)


def q(*cmds):
    queue = CommandQueue()
    for c in cmds:
        queue.enqueue(c)
    return queue


def values(cmds):
    return [c.value for c in cmds]


def test_defaults_and_unique_uuids():
    a, b = QueuedCommand("a"), QueuedCommand("b")
    assert a.mode is QueueMode.PROMPT and a.priority is Priority.NEXT and a.agent_id is None
    assert a.uuid and a.uuid != b.uuid
    assert Priority("later") is Priority.LATER and QueueMode("task-notification") is QueueMode.TASK_NOTIFICATION


def test_is_slash_command():
    assert QueuedCommand("  /compact").is_slash_command
    assert not QueuedCommand("/compact", skip_slash_commands=True).is_slash_command
    assert not QueuedCommand("/compact", mode=QueueMode.BASH).is_slash_command
    assert not QueuedCommand("/x", mode=QueueMode.TASK_NOTIFICATION).is_slash_command
    assert not QueuedCommand("fix /etc/hosts").is_slash_command


def test_len_and_peek_all_in_priority_order():
    queue = q(QueuedCommand("l1", priority=Priority.LATER), QueuedCommand("n1"),
              QueuedCommand("now1", priority=Priority.NOW), QueuedCommand("n2"),
              QueuedCommand("now2", priority=Priority.NOW))
    assert len(queue) == 5
    assert values(queue.peek_all()) == ["now1", "now2", "n1", "n2", "l1"]
    assert len(queue) == 5  # peeking removes nothing


def pop(queue: CommandQueue) -> QueuedCommand | None:
    """Take the most urgent command the way the dispatcher does: peek, then remove."""
    items = queue.peek_all()
    if not items:
        return None
    queue.remove(items[:1])
    return items[0]


def test_taking_most_urgent_first_fifo_within_priority():
    queue = q(QueuedCommand("n1"), QueuedCommand("l1", priority=Priority.LATER),
              QueuedCommand("now1", priority=Priority.NOW), QueuedCommand("n2"))
    assert [pop(queue).value for _ in range(4)] == ["now1", "n1", "n2", "l1"]
    assert pop(queue) is None
    assert len(queue) == 0


def test_get_commands_by_max_priority():
    queue = q(QueuedCommand("l1", priority=Priority.LATER), QueuedCommand("n1"),
              QueuedCommand("now1", priority=Priority.NOW), QueuedCommand("n2"))
    assert values(queue.get_commands_by_max_priority(Priority.NOW)) == ["now1"]
    assert values(queue.get_commands_by_max_priority(Priority.NEXT)) == ["now1", "n1", "n2"]
    assert values(queue.get_commands_by_max_priority(Priority.LATER)) == ["now1", "n1", "n2", "l1"]
    assert values(queue.get_commands_by_max_priority("next")) == ["now1", "n1", "n2"]
    assert len(queue) == 4


def test_remove_by_identity_of_uuid():
    a, b, c = QueuedCommand("a"), QueuedCommand("b"), QueuedCommand("c")
    queue = q(a, b, c)
    queue.remove([a, c])
    assert values(queue.peek_all()) == ["b"]
    queue.remove([a])  # already gone: no-op
    assert values(queue.peek_all()) == ["b"]


def test_subscribe_notifies_on_changes_and_unsubscribes():
    queue = CommandQueue()
    calls = []
    unsubscribe = queue.subscribe(lambda: calls.append(len(queue)))
    a = QueuedCommand("a")
    queue.enqueue(a)
    queue.enqueue(QueuedCommand("b"))
    pop(queue)
    queue.remove([QueuedCommand("not queued")])  # nothing changed: no notification
    queue.remove(queue.peek_all())
    assert calls == [1, 2, 1, 0]
    unsubscribe()
    queue.enqueue(QueuedCommand("c"))
    assert calls == [1, 2, 1, 0]
    unsubscribe()  # idempotent


def test_commands_for_turn_main_thread():
    queue = q(QueuedCommand("prompt"), QueuedCommand("/compact"),
              QueuedCommand("/literal", skip_slash_commands=True),
              QueuedCommand("later", priority=Priority.LATER),
              QueuedCommand("sub", mode=QueueMode.TASK_NOTIFICATION, agent_id="a1"),
              QueuedCommand("note", mode=QueueMode.TASK_NOTIFICATION),
              QueuedCommand("urgent", priority=Priority.NOW))
    assert values(commands_for_turn(queue, agent_id=None)) == ["urgent", "prompt", "/literal", "note"]
    assert len(queue) == 7  # filtering is a snapshot; the loop removes what it consumes


def test_commands_for_turn_subagent_takes_only_its_task_notifications():
    queue = q(QueuedCommand("prompt"),
              QueuedCommand("mine", mode=QueueMode.TASK_NOTIFICATION, agent_id="a1"),
              QueuedCommand("theirs", mode=QueueMode.TASK_NOTIFICATION, agent_id="a2"),
              QueuedCommand("prompt for a1", agent_id="a1"),
              QueuedCommand("main note", mode=QueueMode.TASK_NOTIFICATION),
              QueuedCommand("mine later", mode=QueueMode.TASK_NOTIFICATION, agent_id="a1",
                            priority=Priority.LATER))
    assert values(commands_for_turn(queue, agent_id="a1")) == ["mine"]
    assert values(commands_for_turn(queue, agent_id="a3")) == []


def test_queued_command_message_prompt():
    msg = queued_command_message(QueuedCommand("also fix the tests"))
    assert msg.role == "user" and msg.is_meta
    assert msg.text == ("<system-reminder>\nThe user sent the following message while you were working:\n"
                        "also fix the tests\n\nPlease address this message and continue with your tasks.\n"
                        "</system-reminder>")


def test_queued_command_message_task_notification_and_bash():
    note = queued_command_message(QueuedCommand("<task-notification>done</task-notification>",
                                                mode=QueueMode.TASK_NOTIFICATION))
    assert note.text == "<task-notification>done</task-notification>"
    bash = queued_command_message(QueuedCommand("ls -la", mode=QueueMode.BASH))
    assert bash.text == "<bash-input>ls -la</bash-input>"


def test_queued_command_message_carries_pasted_images():
    cmd = QueuedCommand("look at this", pasted_contents={
        1: {"type": "image", "content": "aGVsbG8=", "media_type": "image/jpeg"},
        2: {"type": "text", "content": "already expanded"}})
    msg = queued_command_message(cmd)
    assert [b["type"] for b in msg.content] == ["text", "image"]
    assert msg.content[1]["source"] == {"type": "base64", "media_type": "image/jpeg", "data": "aGVsbG8="}
