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
  const mark = event.target.closest("button.mark");
  if (!mark) return;
  const box = mark.closest(".marks");
  const saved = box.querySelector(".saved");
  const response = await fetch("/judgements", {
    method: "POST",
    headers: {"Content-Type": "application/json"},
    body: JSON.stringify({corpus: box.dataset.corpus, query: box.dataset.query, id: box.dataset.id,
                          grade: Number(mark.dataset.grade)}),
  });
  if (response.ok) {
    box.querySelectorAll("button.mark").forEach((b) => b.classList.toggle("on", b === mark));
    saved.textContent = "saved";
  } else {
    saved.textContent = "not saved (" + response.status + ")";
  }
});

// Show the current provision in the act's table of contents.
document.addEventListener("DOMContentLoaded", () => {
  const toc = document.querySelector(".toc");
  const current = toc && toc.querySelector("li.current");
  if (current) toc.scrollTop = current.offsetTop - toc.clientHeight / 2;
});
