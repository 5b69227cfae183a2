"""One module per page of the site: its view and the shapes it puts on screen."""
