"""The HTTP API's routers, one per resource: search, provisions, citations (cite, verify),
corpora (and health), history (versions, diffs, validity) and the page. Each route reads the
served state from its request (:func:`lexir.service.http.state_of`); :func:`lexir.service.app.create_app`
puts them together behind one guard."""
