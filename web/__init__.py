"""The site: every page (web.pages), its charts, words and templates, in both languages."""
