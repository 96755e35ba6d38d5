// lexir's page: relevance marks and the copy button. Everything else is plain links and forms.
document.addEventListener("click", async (event) => {
  const copy = event.target.closest("button.copy");
  if (copy) {
    const text = copy.dataset.copy;
    try { await navigator.clipboard.writeText(text); } catch (e) {
      const area = document.createElement("textarea");  // clipboard API needs a secure context
      area.value = text; document.body.appendChild(area); area.select();
      document.execCommand("copy"); area.remove();
    }
    copy.textContent = "Copied";
    setTimeout(() => { copy.textContent = "Copy citation"; }, 1500);
    return;
  }
  // The act's contents link without the question (hundreds of links would each carry it); the
  // question goes along when one is followed, so the provision opened can still be marked.
  const inToc = event.target.closest(".toc a");
  if (inToc) {
    const q = new URLSearchParams(window.location.search).get("q");
    if (q) {
      const target = new URL(inToc.href);
      target.searchParams.set("q", q);
      inToc.href = target.toString();
    }
    return;
  }
  const mark = event.target.closest("button.mark");
  if (!mark) return;
  const box = mark.closest(".marks");
  const saved = box.querySelector(".saved");
  let response;
  try {
    response = await fetch("/judgements", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({corpus: box.dataset.corpus, query: box.dataset.query, id: box.dataset.id,
                            grade: Number(mark.dataset.grade)}),
    });
  } catch (e) {  // no answer at all: the server is gone or the network is down
    saved.textContent = "not saved (no connection to the server)";
    return;
  }
  if (response.ok) {
    box.querySelectorAll("button.mark").forEach((b) => {
      b.classList.toggle("on", b === mark);
      b.setAttribute("aria-pressed", b === mark ? "true" : "false");
    });
    saved.textContent = "saved";
  } else {
    saved.textContent = "not saved (" + response.status + ")";
  }
});

// Show the current provision in the middle of the act's table of contents.
document.addEventListener("DOMContentLoaded", () => {
  const toc = document.querySelector(".toc");
  const current = toc && toc.querySelector("li.current");
  if (current) {
    const offset = current.getBoundingClientRect().top - toc.getBoundingClientRect().top;
    toc.scrollTop += offset - toc.clientHeight / 2 + current.clientHeight / 2;
  }
});
