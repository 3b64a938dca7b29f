"""How results are shown, by the science they show: each module holds a domain's frames (tidy
DataFrames), charts (Altair) and figures (a result in, a captioned chart or table out) together.

- :mod:`~magdash.presentation.scaling_figures`: V against n, alpha by layer, the massive-dimension control;
- :mod:`~magdash.presentation.tokenization_figures`: alpha within token-count strata and adjusted for tokenization;
- :mod:`~magdash.presentation.weber_figures`: the Weber window, H1-H4, CV, noise models, E3, E4;
- :mod:`~magdash.presentation.compare_figures`: two models compared (E6), and the Controls page's variants;
- :mod:`~magdash.presentation.geometry_figures`: centroid RDMs, RSA, PC1;
- :mod:`~magdash.presentation.frequency_figures`: counts and E5;
- :mod:`~magdash.presentation.depth_figures`: the depth diagnostics;
- :mod:`~magdash.presentation.controls_figures`: the robustness controls and the study design;
- :mod:`~magdash.presentation.probe_figures`: the probes (decodability and the decoded Weber fraction);
- :mod:`~magdash.presentation.page_figures`: the figures each page draws, declared once for the page,
  the report and the tests;
- :mod:`~magdash.presentation.chart_style`: the Altair vocabulary they share (depth axis, bands,
  colours, thinning);
- :mod:`~magdash.presentation.report`: the HTML report, its manifest and one section builder per page;
- :mod:`~magdash.presentation.export`: PNG, SVG and CSV, offline.

How a number, and a missing one, is written is :mod:`magdash.formatting`'s.

Nothing here imports torch or transformers, reads a store, or draws on Streamlit.
"""
