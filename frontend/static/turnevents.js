// One running turn's events (live, or replayed after `attach`) drawn into
// its answer: text, notices, tool cards, approvals and questions (app.js's HANDLERS send them here).

import { approvalPrompt } from "./approval.js";
import { appTitle } from "./appviews.js";
import { elicitationPrompt } from "./elicitation.js";

const NARROW = window.matchMedia("(max-width: 899px)");

/** Draw one event; `ctx` = {view, cards, canvas, apps, send, onDone(event)}. */
export function drawTurnEvent(turn, event, { view, cards, canvas, apps, send, onDone }) {
  const place = (node) => turn.addBlock(node);
  switch (event.type) {
    case "token":
      turn.token(event.text);
      break;
    case "notice":
      turn.notice(event);
      break;
    case "render":
      turn.render(event);
      break;
    case "tool_start":
      cards.get(event.call_id, event, place).start(event);
      break;
    case "tool_progress":
      cards.find(event.call_id)?.reportProgress(event);
      break;
    case "tool_log":
      cards.find(event.call_id)?.log(event);
      break;
    case "approval_request": {
      const card = cards.get(event.call_id, event, place);
      card.setArguments(event.arguments);
      card.waiting("Waiting for your approval");
      card.interaction.replaceChildren(approvalPrompt(event, send));
      view.changed();
      break;
    }
    case "elicitation_request": {
      const card = event.call_id ? cards.find(event.call_id) : undefined;
      const answered = (message) => {
        const ok = send(message);
        if (ok) card?.resume();
        return ok;
      };
      const form = elicitationPrompt(event, answered);
      if (card) {
        card.waiting("Waiting for your answer");
        card.interaction.replaceChildren(form);
        view.changed();
      } else {
        place(form);
      }
      break;
    }
    case "tool_result": {
      performance.mark(`sb:tool-result:${event.call_id}`); // bench/apps.py: tool result to app initialized
      cards.get(event.call_id, event, place).finish(event);
      canvas.showResult(event.artifacts, event.display);
      view.changed();
      break;
    }
    case "app": {
      // An app tool call finished: its card reopens the app, and the app opens in the canvas.
      cards.latest(event.call_id)?.offerApp();
      apps.add(event.call_id, { title: appTitle(event.tool, event.server, cards.latest(event.call_id)?.arguments),
        show: !NARROW.matches || !canvas.panel.hidden });
      view.changed();
      break;
    }
    case "message_done":
      turn.done(event);
      cards.abandon(event.finish_reason === "cancelled" ? "Cancelled" : "Did not finish");
      onDone(event);
      break;
    default:
      break;
  }
}
