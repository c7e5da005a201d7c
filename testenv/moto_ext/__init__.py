"""An extension of moto server 5.2.5 that adds the EKS calls moto lacks; see server.py."""
