// Renders /openapi.json with Swagger UI (public/assets/swagger-ui/). Nothing leaves this origin: the
// validator badge, which would send the document to another host, is off, and "Try it out" calls the
// document's server, this origin.
// SwaggerUIBundle is the global that swagger-ui-bundle.js defines.
SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  validatorUrl: null,
  deepLinking: true,
  docExpansion: "list",
  defaultModelsExpandDepth: 0,
  displayRequestDuration: true,
  filter: true,
  persistAuthorization: false,
  // The browser test waits for this mark before it looks at the page.
  onComplete: () => {
    document.body.dataset.rendered = "true";
  },
});
