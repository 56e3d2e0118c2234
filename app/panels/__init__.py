"""The app's panels: start view, data panel, model form, jobs panel, log panel, About."""
