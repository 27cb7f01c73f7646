"""Code repositories: their files, licences and what to keep of them."""
