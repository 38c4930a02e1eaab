/** Status recorded for requests whose client went away before the response ended (nginx's convention). */
export const CLIENT_CLOSED_REQUEST = 499;
